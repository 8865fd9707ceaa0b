// Request conversion + render for a long agent request: a Chat Completions body with a system
// prompt, 12 tools and 40 tool turns (reasoning, a call with file-sized arguments, a ~1.7K-token
// result), about 77K prompt tokens with the V4.1 tokenizer (the seeds' average request).
// Side by side: parsing the body with nlohmann alone (the floor for any JSON-based conversion),
// and encoding the rendered segments (the tokenizer, for scale).
//
//   build/bench/bench_render_agent_request [--benchmark_repetitions=5]

#include "recipe/protocol/chat_request.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include "bench/benchmark_main.hpp"

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <random>

using namespace deepinfer::recipe;

namespace {

std::string cache_dir() {
  if (const char* c = std::getenv("DEEPINFER_CACHE"))
    return c;
  return std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.cache/deepinfer";
}

// Deterministic code-like text of about `words` words.
std::string code_text(std::mt19937& rng, std::size_t words) {
  static const char* vocab[] = {"int",    "return", "const",  "auto",  "std::vector<int>", "for",   "if",
                                "else",   "while",  "size_t", "value", "index", "buffer", "(",     ")",
                                "{",      "}",      ";",      "=",     "+",     "->",     "nullptr", "true",
                                "config", "request", "tokens", "cache", "block", "hash",  "0",     "42",
                                "// why", "std::string", "emplace_back", "prefix", "kv", "layer", "rank"};
  std::string s;
  for (std::size_t i = 0; i < words; ++i) {
    s += vocab[rng() % (sizeof vocab / sizeof *vocab)];
    s += (i % 12 == 11) ? "\n    " : " ";
  }
  return s;
}

std::string agent_request() {
  std::mt19937 rng(7);
  nlohmann::ordered_json j;
  j["model"] = "deepseek-v4.1-flash";
  j["reasoning_effort"] = "high";
  j["tools"] = nlohmann::ordered_json::array();
  for (int t = 0; t < 12; ++t)
    j["tools"].push_back({{"type", "function"},
                          {"function",
                           {{"name", "tool_" + std::to_string(t)},
                            {"description", "Tool number " + std::to_string(t) + " of the coding agent."},
                            {"parameters",
                             {{"type", "object"},
                              {"properties", {{"path", {{"type", "string"}}}, {"content", {{"type", "string"}}},
                                              {"line", {{"type", "integer"}}}}},
                              {"required", {"path"}}}}}}});
  auto& m = j["messages"];
  m.push_back({{"role", "system"}, {"content", "You are a coding agent.\n" + code_text(rng, 1500)}});
  m.push_back({{"role", "user"}, {"content", "Refactor the scheduler and run the tests."}});
  for (int turn = 0; turn < 40; ++turn) {
    nlohmann::ordered_json args = {{"path", "src/file_" + std::to_string(turn) + ".cpp"},
                                   {"content", code_text(rng, 120)},
                                   {"line", turn * 10}};
    const std::string id = "call_" + std::to_string(turn);
    m.push_back({{"role", "assistant"},
                 {"reasoning_content", "Next I inspect file " + std::to_string(turn) + ". " + code_text(rng, 40)},
                 {"content", nullptr},
                 {"tool_calls",
                  {{{"id", id}, {"type", "function"},
                    {"function", {{"name", "tool_" + std::to_string(turn % 12)}, {"arguments", args.dump()}}}}}}});
    m.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", code_text(rng, 1045)}});
  }
  return j.dump();
}

struct fixture {
  std::string body = agent_request();
  std::shared_ptr<const tokenizer> tok;
  std::optional<special_table> table;
  fixture() {
    auto t = tokenizer::load(cache_dir() + "/tokenizer/tokenizer_v41.json");
    if (!t) {
      std::fprintf(stderr, "tokenizer: %s\n", t.error.c_str());
      std::exit(1);
    }
    tok = t.value;
    auto s = special_table::build(template_version::dsv41, [&](std::string_view x) { return tok->special_id(x); });
    table = *s;
  }
};

fixture& fx() {
  static fixture f;
  return f;
}

void report(benchmark::State& state) {
  static const std::size_t tokens = [] {
    auto conv = parse_chat_request(fx().body);
    return fx().tok->encode(*render(*conv, *fx().table)).size();
  }();
  state.counters["prompt_tokens"] = static_cast<double>(tokens);
  state.counters["body_bytes"] = static_cast<double>(fx().body.size());
}

void json_parse_only(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(nlohmann::ordered_json::parse(fx().body));
  report(state);
}

void parse_and_render(benchmark::State& state) {
  for (auto _ : state) {
    auto conv = parse_chat_request(fx().body);
    auto segs = render(*conv, *fx().table);
    benchmark::DoNotOptimize(segs->size());
  }
  report(state);
}

void render_only(benchmark::State& state) {
  auto conv = parse_chat_request(fx().body);
  for (auto _ : state)
    benchmark::DoNotOptimize(render(*conv, *fx().table)->size());
  report(state);
}

void encode_rendered(benchmark::State& state) {
  auto conv = parse_chat_request(fx().body);
  auto segs = *render(*conv, *fx().table);
  for (auto _ : state)
    benchmark::DoNotOptimize(fx().tok->encode(segs).size());
  report(state);
}

} // namespace

BENCHMARK(json_parse_only)->Unit(benchmark::kMillisecond);
BENCHMARK(parse_and_render)->Unit(benchmark::kMillisecond);
BENCHMARK(render_only)->Unit(benchmark::kMillisecond);
BENCHMARK(encode_rendered)->Unit(benchmark::kMillisecond);
int main(int argc, char** argv) {
  return deepinfer::bench::run_benchmarks(argc, argv, [] { fx(); }); // tokenizer and input built untimed
}
