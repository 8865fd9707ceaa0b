// deepinfer-profile --model DIR [--max-context N] [--threads N] [--cpu-isa auto|portable|avx2|avx512]
//   [--out FILE]
// Measures prefill chunks of several sizes at several contexts, fits the cost model
// cost(q, c) by least squares and writes it next to the model (DIR/cost_model.json).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/cost_model.hpp"
#include "engine/kernels/isa.hpp"
#include "engine/rank_engine.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

using namespace deepinfer::engine;

int main(int argc, char** argv) {
  // stdout carries the result; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("stderr"));
  std::string model_dir, out;
  int64_t max_context = 8192;
  int threads = 2;
  std::string isa_name = "auto";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--model")
      model_dir = v;
    else if (a == "--max-context")
      max_context = std::stoll(v);
    else if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--out")
      out = v;
    else if (a == "--cpu-isa")
      isa_name = v;
  }
  const auto isa = kernels::choose_cpu_isa(isa_name);
  if (!isa.isa) {
    std::fprintf(stderr, "deepinfer-profile: --cpu-isa: %s\n", isa.error.c_str());
    return 2;
  }
  if (model_dir.empty()) {
    std::fprintf(stderr, "usage: deepinfer-profile --model DIR [--max-context N] [--threads N] "
                         "[--cpu-isa auto|portable|avx2|avx512] [--out FILE]\n");
    return 2;
  }
  if (out.empty())
    out = model_dir + "/cost_model.json";
  const std::vector<int64_t> qs{32, 128, 512, 1024};
  int64_t chunk_total = 0;
  for (auto q : qs)
    chunk_total += q;
  auto loaded = rank_engine::load(
      model_dir, rank_engine::config{(max_context + chunk_total) / 128 + 8, threads, isa.isa});
  if (!loaded.engine) {
    std::fprintf(stderr, "deepinfer-profile: %s\n", loaded.error.c_str());
    return 1;
  }
  auto& e = *loaded.engine;
  std::mt19937_64 rng(1);
  std::vector<cost_model::sample> samples;
  std::vector<cost_model::finish_sample> finishes;
  using clock = std::chrono::steady_clock;
  uint64_t next = 1;
  std::vector<int64_t> starts{0};
  for (int64_t c = 1024; c <= max_context; c *= 2)
    starts.push_back(c);
  for (int rep = 0; rep < 2; ++rep)
    for (auto c0 : starts) {
      prefill_request req;
      req.seq = sequence_id{next++};
      for (int64_t i = 0; i < c0 + chunk_total + 1; ++i)
        req.tokens.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(e.model().vocab_size)));
      if (e.begin_prefill(req).status != engine_status::ok) {
        std::fprintf(stderr, "deepinfer-profile: prefill refused\n");
        return 1;
      }
      e.prefill_step(req.seq, c0);
      int64_t c = c0;
      // Alternate the order so no chunk size is always measured at the same context.
      std::vector<int64_t> order = qs;
      if (rep == 1)
        std::reverse(order.begin(), order.end());
      for (auto q : order) {
        auto t0 = clock::now();
        e.prefill_step(req.seq, q);
        double ns = std::chrono::duration<double, std::nano>(clock::now() - t0).count();
        samples.push_back({q, c, ns});
        std::fprintf(stderr, "chunk q=%-5lld c=%-6lld %9.3f ms\n", static_cast<long long>(q),
                     static_cast<long long>(c), ns / 1e6);
        c += q;
      }
      auto t0 = clock::now();
      e.prefill_step(req.seq, 1);
      double ns = std::chrono::duration<double, std::nano>(clock::now() - t0).count();
      finishes.push_back({c, ns});
      std::fprintf(stderr, "finish c=%-6lld %9.3f ms\n", static_cast<long long>(c), ns / 1e6);
      e.free(req.seq);
    }
  auto m = cost_model::fit(samples, finishes);
  if (!m) {
    std::fprintf(stderr, "deepinfer-profile: the samples do not determine the model\n");
    return 1;
  }
  double err = 0;
  for (auto& s : samples)
    err += std::fabs(m->predict(s.q, s.c) - s.ns) / s.ns;
  std::ofstream(out) << m->to_json();
  std::printf("a0=%.4g a1=%.4g a2=%.4g a3=%.4g f0=%.4g f1=%.4g mean_rel_err=%.3f -> %s\n", m->a0,
              m->a1, m->a2, m->a3, m->f0, m->f1, err / static_cast<double>(samples.size()),
              out.c_str());
  return 0;
}
