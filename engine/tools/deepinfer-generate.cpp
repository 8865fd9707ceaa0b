// deepinfer-generate --model DIR (--prompt-ids "1 2 3" | --prompt TEXT) --max-tokens N
//   [--temperature T --top-k K --top-p P --seed S --stop "ID ..."] [--mode bounded|exact]
//   [--chunk Q] [--threads N] [--cpu-isa auto|portable|avx2|avx512] [--backend cpu|cuda]
//   [--timing] [--text]
//   [--tokenizer PATH] [--print-logits-digest]
// Prints the generated ids space-separated on one line; with --text, their text on a second; with
// --print-logits-digest, the XXH3-64 of the last step's logits (vocab floats) in hex on the last
// line: the same string on every ISA, machine and backend (the determinism contract).
// Text needs the DeepSeek tokenizer: --tokenizer PATH, else the one scripts/bootstrap.sh prepared
// in ${DEEPINFER_CACHE:-~/.cache/deepinfer} for the model's template version.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "engine/kernels/isa.hpp"
#include "engine/rank_engine.hpp"
#include "recipe/base/cli.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <xxhash.h>

using namespace deepinfer::engine;

namespace {

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> out;
  std::istringstream in(s);
  for (long long v; in >> v;)
    out.push_back(static_cast<int32_t>(v));
  return out;
}

/// The tokenizer for `template_version` ("v4.1" / "v3.2"): `path` when given, else the assets
/// scripts/bootstrap.sh prepared. Null, with a message on stderr, when none loads.
std::shared_ptr<const deepinfer::recipe::tokenizer> load_tokenizer(const std::string& path,
                                                                   const std::string& template_version) {
  std::filesystem::path file = path;
  if (file.empty()) {
    const char* cache = std::getenv("DEEPINFER_CACHE");
    const char* home = std::getenv("HOME");
    std::filesystem::path dir = cache ? cache : std::string{home ? home : "."} + "/.cache/deepinfer";
    auto found = deepinfer::recipe::default_tokenizer_path(dir, template_version == "v3.2" ? "dsv32" : "dsv41");
    if (!found) {
      std::fprintf(stderr, "deepinfer-generate: no tokenizer in %s (run scripts/bootstrap.sh or pass --tokenizer PATH)\n",
                   dir.c_str());
      return nullptr;
    }
    file = *found;
  }
  auto loaded = deepinfer::recipe::tokenizer::load(file);
  if (!loaded.value)
    std::fprintf(stderr, "deepinfer-generate: %s: %s\n", file.c_str(), loaded.error.c_str());
  return loaded.value;
}

} // namespace

int main(int argc, char** argv) {
  // stdout carries the result; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("stderr"));
  std::string model_dir, prompt_text, tokenizer_path;
  std::vector<int32_t> prompt;
  prefill_request req;
  req.sampling.max_tokens = 16;
  int64_t chunk = 0;
  int threads = 2;
  bool timing = false, have_text = false, print_text = false, print_digest = false;
  std::string isa_name = "auto", backend_name = "cpu";
  std::string prompt_ids, stop_ids, mode = "bounded";
  CLI::App app{"deepinfer-generate: prefills a prompt and decodes it on one rank engine, printing the tokens.",
               "deepinfer-generate"};
  app.add_option("--model", model_dir, "the model directory")->required();
  auto* ids_opt = app.add_option("--prompt-ids", prompt_ids, "the prompt as token ids, e.g. \"1 2 3\"");
  auto* text_opt = app.add_option("--prompt", prompt_text, "the prompt as text (encoded with the model's tokenizer)");
  ids_opt->excludes(text_opt);
  app.add_option("--max-tokens", req.sampling.max_tokens, "tokens to generate")->capture_default_str();
  app.add_option("--temperature", req.sampling.temperature, "0: greedy")->capture_default_str();
  app.add_option("--top-k", req.sampling.top_k, "0: all")->capture_default_str();
  app.add_option("--top-p", req.sampling.top_p, "1: all")->capture_default_str();
  app.add_option("--seed", req.sampling.seed, "the request's sampling seed")->capture_default_str();
  app.add_option("--stop", stop_ids, "stop token ids, e.g. \"1 2\"");
  app.add_option("--mode", mode, "the decoder")->check(CLI::IsMember({"bounded", "exact"}))->capture_default_str();
  app.add_option("--chunk", chunk, "prefill chunk size (0: the whole prompt at once)")->capture_default_str();
  app.add_option("--threads", threads, "CPU threads")->capture_default_str();
  app.add_option("--cpu-isa", isa_name, "auto, portable, avx2 or avx512")->capture_default_str();
  app.add_option("--backend", backend_name, "cpu or cuda (the device's products give the CPU's bits)")
    ->check(CLI::IsMember({"cpu", "cuda"}))
    ->capture_default_str();
  app.add_flag("--timing", timing, "print prefill and decode timings");
  app.add_flag("--text", print_text, "print the generated text too");
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json (default: the model's in the cache)");
  app.add_flag("--print-logits-digest", print_digest, "print an XXH3 digest of the logits of each step");
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  have_text = text_opt->count() > 0;
  req.mode = mode == "exact" ? decoder_mode::exact : decoder_mode::bounded;
  prompt = parse_ids(prompt_ids);
  req.sampling.stop_ids = parse_ids(stop_ids);
  if (prompt.empty() && !have_text) {
    std::fprintf(stderr, "deepinfer-generate: give --prompt-ids or --prompt (see --help)\n");
    return 2;
  }
  const auto isa = kernels::choose_cpu_isa(isa_name);
  if (!isa.isa) {
    std::fprintf(stderr, "deepinfer-generate: --cpu-isa: %s\n", isa.error.c_str());
    return 2;
  }
  // The model's template version picks the tokenizer, so read the config before the weights.
  std::shared_ptr<const deepinfer::recipe::tokenizer> tok;
  if (have_text || print_text) {
    auto cfg = load_config_file(model_dir + "/config.json");
    tok = load_tokenizer(tokenizer_path, cfg.config ? cfg.config->template_version : "v4.1");
    if (!tok)
      return 1;
    if (have_text)
      prompt = tok->encode(prompt_text);
    if (prompt.empty()) {
      std::fprintf(stderr, "deepinfer-generate: --prompt is empty\n");
      return 2;
    }
  }
  rank_engine::config ec{(static_cast<int64_t>(prompt.size()) + req.sampling.max_tokens) / 128 + 4, threads,
                         isa.isa};
  ec.backend = *parse_backend_kind(backend_name);
  auto loaded = rank_engine::load(model_dir, ec);
  if (!loaded.engine) {
    std::fprintf(stderr, "deepinfer-generate: %s\n", loaded.error.c_str());
    return 1;
  }
  auto& e = *loaded.engine;
  req.seq = sequence_id{1};
  req.tokens = prompt;
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  auto p = e.begin_prefill(req);
  if (p.status != engine_status::ok) {
    std::fprintf(stderr, "deepinfer-generate: %s\n", p.error.c_str());
    return 1;
  }
  const auto n = static_cast<int64_t>(prompt.size());
  do
    p = e.prefill_step(req.seq, chunk > 0 ? chunk : n);
  while (!p.done);
  auto t1 = clock::now();
  std::vector<int32_t> out{p.first.id};
  bool finished = req.sampling.max_tokens <= 1 ||
                  std::find(req.sampling.stop_ids.begin(), req.sampling.stop_ids.end(),
                            p.first.id) != req.sampling.stop_ids.end();
  std::vector<float> last_logits = std::move(p.logits);
  std::vector<sequence_id> ids{req.seq};
  while (!finished) {
    auto d = e.decode_step(ids, print_digest ? &last_logits : nullptr);
    if (d[0].status != engine_status::ok) {
      std::fprintf(stderr, "deepinfer-generate: decode failed\n");
      return 1;
    }
    out.push_back(d[0].token.id);
    finished = d[0].finished;
  }
  auto t2 = clock::now();
  for (std::size_t i = 0; i < out.size(); ++i)
    std::printf("%s%d", i ? " " : "", out[i]);
  std::printf("\n");
  if (print_text)
    std::printf("%s\n", tok->decode(out).c_str());
  if (print_digest)
    std::printf("%016llx\n", static_cast<unsigned long long>(
                                  XXH3_64bits(last_logits.data(), last_logits.size() * sizeof(float))));
  if (timing) {
    double pf = std::chrono::duration<double>(t1 - t0).count();
    double dc = std::chrono::duration<double>(t2 - t1).count();
    std::fprintf(stderr, "prefill %lld tokens in %.3f s (%.0f tok/s); decode %zu tokens in %.3f s (%.1f tok/s)\n",
                 static_cast<long long>(n), pf, static_cast<double>(n) / pf, out.size() - 1, dc,
                 static_cast<double>(out.size() - 1) / (dc > 0 ? dc : 1));
  }
  return 0;
}
