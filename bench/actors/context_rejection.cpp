// bench_context_rejection [REPS] : how long the entrypoint takes to refuse a 7 MB prompt over the
// 40,960-token context limit (actors::prepare_request: parse, model check, render, bounded
// tokenize; one thread), for three 7 MB prompts: one word (the probe of issue 14), English prose,
// and a 1 MB prose prompt (too long for its bytes to prove it: it is tokenized until certainly
// over). Next to it, the cost of tokenizing the whole prompt (what the server did before).
// Needs the tokenizer assets of scripts/prepare_tokenizer.sh. Goal (issue 14): <= 20 ms.

#include "bench/median_ms.hpp"
#include "actors/entrypoint/request_prepare.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/protocol/parse_request.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace deepinfer;
using deepinfer::bench::median_ms;

namespace {

std::string prose(std::size_t size) {
  static const std::string line =
    "The quick brown fox jumps over the lazy dog, then naps in the warm afternoon sun by the river.\n";
  std::string s;
  while (s.size() < size)
    s += line;
  s.resize(size);
  return s;
}

} // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  const char* cache_env = std::getenv("DEEPINFER_CACHE");
  const std::string cache = cache_env ? cache_env : std::string{std::getenv("HOME")} + "/.cache/deepinfer";
  actors::entrypoint::context ctx;
  ctx.cfg.model_name = std::string(1, 'm'); // not = "m": GCC 12 warns falsely (-Wrestrict, PR 105329) on that assignment here
  auto loaded = recipe::tokenizer::load(cache + "/tokenizer/tokenizer_v41.json");
  if (!loaded) {
    std::fprintf(stderr, "cannot load the tokenizer: %s (run scripts/prepare_tokenizer.sh)\n", loaded.error.c_str());
    return 1;
  }
  ctx.tok = loaded.value;
  auto tok = ctx.tok;
  ctx.specials = *recipe::special_table::build(recipe::template_version::dsv41,
                                               [tok](std::string_view s) { return tok->special_id(s); });
  struct prompt {
    const char* name;
    std::string text;
  };
  const std::vector<prompt> prompts = {
    {"7MB_one_word", std::string(7u << 20, 'a')}, {"7MB_prose", prose(7u << 20)}, {"1MB_prose", prose(1u << 20)}};
  std::printf("context limit %lld tokens\n", static_cast<long long>(ctx.cfg.context_limit));
  std::printf("%-14s %10s %9s %9s %16s  %s\n", "prompt", "refuse_ms", "parse_ms", "check_ms", "tokenize_all_ms",
              "message");
  for (const auto& p : prompts) {
    const std::string body =
      nlohmann::json{{"model", "m"}, {"max_tokens", 16}, {"messages", {{{"role", "user"}, {"content", p.text}}}}}.dump();
    std::string message;
    const double refuse = median_ms(reps, [&] {
      auto r = actors::prepare_request(ctx, recipe::api_kind::chat, body, "");
      message = r ? "(accepted?)" : r.error().message;
    });
    const double parse = median_ms(reps, [&] { (void)recipe::parse_request(recipe::api_kind::chat, body); });
    auto conv = recipe::parse_request(recipe::api_kind::chat, body);
    // The context check alone: render, then tokenize only as far as the limit needs.
    const double check = median_ms(reps, [&] {
      auto segs = recipe::render(*conv, *ctx.specials);
      (void)ctx.tok->encode_within(*segs, static_cast<std::size_t>(ctx.cfg.context_limit - 16));
    });
    auto segs = recipe::render(*conv, *ctx.specials);
    std::size_t all = 0;
    const double full = median_ms(std::max(1, reps / 3), [&] { all = ctx.tok->encode(*segs).size(); });
    std::printf("%-14s %10.1f %9.1f %9.1f %16.1f  %s (%zu tokens in all)\n", p.name, refuse, parse, check, full,
                message.substr(message.find("requested"), 60).c_str(), all);
  }
  return 0;
}
