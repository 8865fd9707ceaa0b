// Stream parser cost per token (goal < 100 ns/token) on a long V4.1 assistant turn (reasoning,
// CJK/emoji content, tool calls with large arguments) tokenized by the real tokenizer, fed one
// token at a time (as decode streams) and in chunks of 16. Side by side: only appending each
// token's bytes (the floor: what any detokenizer does).
//
//   build/bench/bench_render_stream_parser

#include "recipe/render/renderer.hpp"
#include "recipe/stream/stream_parser.hpp"
#include "recipe/testdata/samples.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include "bench/benchmark_main.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>

using namespace deepinfer::recipe;

namespace {

struct fixture {
  std::shared_ptr<const tokenizer> tok;
  std::optional<special_table> table;
  std::vector<token_id> ids;
  fixture() {
    std::string cache = std::getenv("DEEPINFER_CACHE")
                            ? std::getenv("DEEPINFER_CACHE")
                            : std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.cache/deepinfer";
    auto t = tokenizer::load(cache + "/tokenizer/tokenizer_v41.json");
    if (!t) {
      std::fprintf(stderr, "tokenizer: %s\n", t.error.c_str());
      std::exit(1);
    }
    tok = t.value;
    table = *special_table::build(template_version::dsv41, [&](std::string_view x) { return tok->special_id(x); });
    // A long turn: the sample turn's parts repeated.
    message m = test::sample_turn(true);
    std::string reasoning, content;
    for (int i = 0; i < 40; ++i) {
      reasoning += *m.reasoning + " Step " + std::to_string(i) + ".\n";
      content += m.content.front().value + "\n";
    }
    m.reasoning = reasoning;
    m.content = {content_part::text(content)};
    auto calls = m.tool_calls;
    for (int i = 0; i < 10; ++i)
      m.tool_calls.insert(m.tool_calls.end(), calls.begin(), calls.end());
    ids = tok->encode(render_completion(m, *table, true));
  }
};

fixture& fx() {
  static fixture f;
  return f;
}

void run_parser(benchmark::State& state, std::size_t chunk) {
  const auto& f = fx();
  std::size_t events = 0;
  for (auto _ : state) {
    stream_parser p({true, "call_"}, *f.table, [&](token_id id) { return f.tok->token_bytes(id); });
    for (std::size_t at = 0; at < f.ids.size(); at += chunk)
      events += p.feed(std::span(f.ids).subspan(at, std::min(chunk, f.ids.size() - at))).size();
    benchmark::DoNotOptimize(events);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * f.ids.size()));
  state.counters["ns_per_token"] = benchmark::Counter(static_cast<double>(state.iterations() * f.ids.size()),
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
                                                      benchmark::Counter::kIs1000);
  state.counters["tokens"] = static_cast<double>(f.ids.size());
}

void parser_one_token_per_feed(benchmark::State& state) { run_parser(state, 1); }
void parser_16_tokens_per_feed(benchmark::State& state) { run_parser(state, 16); }

void baseline_append_token_bytes(benchmark::State& state) {
  const auto& f = fx();
  for (auto _ : state) {
    std::string out;
    for (auto id : f.ids)
      out += f.tok->token_bytes(id);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * f.ids.size()));
  state.counters["ns_per_token"] = benchmark::Counter(static_cast<double>(state.iterations() * f.ids.size()),
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
                                                      benchmark::Counter::kIs1000);
}

} // namespace

BENCHMARK(baseline_append_token_bytes);
BENCHMARK(parser_one_token_per_feed);
BENCHMARK(parser_16_tokens_per_feed);
int main(int argc, char** argv) {
  return deepinfer::bench::run_benchmarks(argc, argv, [] { fx(); }); // tokenizer and input built untimed
}
