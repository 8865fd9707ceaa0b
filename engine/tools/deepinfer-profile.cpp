// deepinfer-profile --model DIR [--max-context N] [--threads N] [--cpu-isa auto|portable|avx2|avx512]
//   [--backend cpu|cuda] [--out FILE]
// Measures prefill chunks of several sizes at several contexts (engine::cost_profile), fits the
// cost model cost(q, c) by least squares and adds it, for this ISA and thread count, to the fits
// kept next to the model (DIR/cost_model.json, engine::cost_model_file).
#include <cstdio>
#include <string>

#include "engine/cost_model_file.hpp"
#include "engine/cost_profile.hpp"
#include "engine/kernels/isa.hpp"
#include "recipe/base/cli.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

using namespace deepinfer::engine;

int main(int argc, char** argv) {
  // stdout carries the result; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("stderr"));
  CLI::App app{"deepinfer-profile: measures prefill chunks of a model on this CPU, fits the cost model and "
               "adds the fit to MODEL_DIR/cost_model.json",
               "deepinfer-profile"};
  std::string model_dir, out;
  int64_t max_context = 8192;
  int threads = 2;
  std::string isa_name = "auto";
  app.add_option("--model", model_dir, "model directory (config.json + model.safetensors)")->required();
  app.add_option("--max-context", max_context, "longest context measured")->capture_default_str()
    ->check(CLI::Range(256, 1 << 20));
  app.add_option("--threads", threads, "CPU backend threads")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--cpu-isa", isa_name, "kernels: auto, portable, avx2 or avx512")->capture_default_str();
  std::string backend = "cpu";
  app.add_option("--backend", backend, "cpu or cuda: where the products run")
    ->check(CLI::IsMember({"cpu", "cuda"}))
    ->capture_default_str();
  app.add_option("--out", out, "fit file (default MODEL_DIR/cost_model.json)");
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  const auto isa = kernels::choose_cpu_isa(isa_name);
  if (!isa.isa) {
    std::fprintf(stderr, "deepinfer-profile: --cpu-isa: %s\n", isa.error.c_str());
    return 2;
  }
  if (out.empty())
    out = model_dir + "/cost_model.json";
  // Measures now (even when the file has a fit for this setup) and replaces that entry.
  auto r = cost_profile::measure(model_dir,
                                 cost_profile::config{threads, isa.isa, max_context, *parse_backend_kind(backend)});
  for (const auto& s : r.chunks)
    std::fprintf(stderr, "chunk q=%-5lld c=%-6lld %9.3f ms\n", static_cast<long long>(s.q),
                 static_cast<long long>(s.c), s.ns / 1e6);
  for (const auto& f : r.finishes)
    std::fprintf(stderr, "finish c=%-6lld %9.3f ms\n", static_cast<long long>(f.c), f.ns / 1e6);
  if (!r.fit) {
    std::fprintf(stderr, "deepinfer-profile: %s\n", r.error.c_str());
    return 1;
  }
  auto file = cost_model_file::load(out);
  file.put(*r.fit);
  if (auto err = file.save(out); !err.empty()) {
    std::fprintf(stderr, "deepinfer-profile: %s\n", err.c_str());
    return 1;
  }
  const auto& k = r.fit->model.coefficients();
  std::printf("isa=%s threads=%d a0=%.4g a1=%.4g a2=%.4g a3=%.4g f0=%.4g f1=%.4g (ns) mean_rel_err=%.3f -> %s\n",
              kernels::to_string(r.fit->isa), r.fit->threads, k.a0 * 1e9, k.a1 * 1e9, k.a2 * 1e9, k.a3 * 1e9,
              k.f0 * 1e9, k.f1 * 1e9, r.fit->mean_rel_err, out.c_str());
  return 0;
}
