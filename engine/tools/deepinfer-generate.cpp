// deepinfer-generate --model DIR (--prompt-ids "1 2 3" | --prompt TEXT) --max-tokens N
//   [--temperature T --top-k K --top-p P --seed S --stop "ID ..."] [--mode bounded|exact]
//   [--chunk Q] [--threads N] [--cpu-isa auto|portable|avx2|avx512] [--timing] [--text]
//   [--tokenizer PATH] [--print-logits-digest]
// Prints the generated ids space-separated on one line; with --text, their text on a second; with
// --print-logits-digest, the XXH3-64 of the last step's logits (vocab floats) in hex on the last
// line: the same string on every ISA and machine (the determinism contract).
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

int usage() {
  std::fprintf(stderr,
               "usage: deepinfer-generate --model DIR (--prompt-ids \"1 2 3\" | --prompt TEXT) "
               "--max-tokens N [--temperature T] [--top-k K] [--top-p P] [--seed S] "
               "[--stop \"IDS\"] [--mode bounded|exact] [--chunk Q] [--threads N] "
               "[--cpu-isa auto|portable|avx2|avx512] [--timing] [--text] [--tokenizer PATH] "
               "[--print-logits-digest]\n");
  return 2;
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
  std::string isa_name = "auto";
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc)
          throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--model")
        model_dir = next();
      else if (a == "--prompt-ids")
        prompt = parse_ids(next());
      else if (a == "--prompt") {
        prompt_text = next();
        have_text = true;
      } else if (a == "--max-tokens")
        req.sampling.max_tokens = std::stoi(next());
      else if (a == "--temperature")
        req.sampling.temperature = std::stof(next());
      else if (a == "--top-k")
        req.sampling.top_k = std::stoi(next());
      else if (a == "--top-p")
        req.sampling.top_p = std::stof(next());
      else if (a == "--seed")
        req.sampling.seed = std::stoull(next());
      else if (a == "--stop")
        req.sampling.stop_ids = parse_ids(next());
      else if (a == "--mode") {
        auto m = next();
        if (m != "bounded" && m != "exact")
          throw std::invalid_argument("--mode is bounded or exact");
        req.mode = m == "exact" ? decoder_mode::exact : decoder_mode::bounded;
      } else if (a == "--chunk")
        chunk = std::stoll(next());
      else if (a == "--threads")
        threads = std::stoi(next());
      else if (a == "--cpu-isa")
        isa_name = next();
      else if (a == "--print-logits-digest")
        print_digest = true;
      else if (a == "--timing")
        timing = true;
      else if (a == "--text")
        print_text = true;
      else if (a == "--tokenizer")
        tokenizer_path = next();
      else
        return usage();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deepinfer-generate: %s\n", e.what());
    return usage();
  }
  if (model_dir.empty() || (prompt.empty() && !have_text))
    return usage();
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
  auto loaded = rank_engine::load(model_dir, rank_engine::config{
                                                 (static_cast<int64_t>(prompt.size()) +
                                                  req.sampling.max_tokens) / 128 + 4,
                                                 threads, isa.isa});
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
