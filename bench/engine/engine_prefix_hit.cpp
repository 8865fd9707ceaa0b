// bench_engine_prefix_hit MODEL_DIR [--tokens 30139] [--threads 1] [--mode exact|bounded]
// [--repeat N] [--cpu-time 1] [--fresh-hot 1]
// The engine's share of a long prompt's TTFT, cold (no hit) against hot (the same prompt again
// with every reusable block imported and the SWA snapshot at the hit), in one run: prefill, then
// the export of the sequence that the prefill rank hands to decode. Also checks that the hot
// first token and logits equal the cold ones bit for bit (exact mode).
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/rank_engine.hpp"

#include "bench_clock.hpp"
#include "bench_inputs.hpp"

using namespace deepinfer::engine;
using deepinfer::bench::clock_now;
using deepinfer::bench::seconds_since;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_engine_prefix_hit MODEL_DIR [--tokens N] [--threads N] "
                         "[--mode exact|bounded]\n");
    return 2;
  }
  std::string dir = argv[1];
  int64_t n = 30139;
  int threads = 1;
  std::optional<kernels::cpu_isa> isa;
  decoder_mode mode = decoder_mode::exact;
  int repeat = 1;
  bool fresh_hot = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--tokens")
      n = std::stoll(v);
    else if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--repeat")
      repeat = std::stoi(v);
    else if (a == "--fresh-hot") // 1: the hot prefill runs on a second, freshly loaded engine
      fresh_hot = v != "0";
    else if (a == "--cpu-time") // 1: time on the process CPU clock (see bench_clock.hpp)
      deepinfer::bench::use_cpu_time = v != "0";
    else if (a == "--cpu-isa")
      isa = deepinfer::bench::cpu_isa_or_exit(v);
    else if (a == "--mode")
      mode = v == "bounded" ? decoder_mode::bounded : decoder_mode::exact;
  }
  rank_engine::config cfg;
  cfg.kv_blocks = 3 * (n / 128 + 2);
  cfg.threads = threads;
  cfg.isa = isa;
  auto engine = deepinfer::bench::load_or_exit(dir, cfg);
  auto& e = *engine;
  std::mt19937_64 rng(7);
  std::vector<int32_t> prompt(static_cast<std::size_t>(n));
  for (auto& t : prompt)
    t = static_cast<int32_t>(rng() % 129280);

  prefill_request cold;
  cold.seq = sequence_id{1};
  cold.tokens = prompt;
  cold.mode = mode;
  cold.sampling.max_tokens = 16;
  double t0 = clock_now();
  auto pc = e.prefill(cold);
  const double cold_s = seconds_since(t0);
  t0 = clock_now();
  auto cold_export = e.export_sequence(cold.seq);
  const double cold_export_s = seconds_since(t0);

  // What the store would hold: every full block below the cap, and the snapshot the prefill took.
  const int64_t hit = (n - 134) / 128 * 128;
  std::optional<std::vector<std::byte>> snap;
  for (auto& sc : e.export_snapshots(cold.seq))
    if (sc.end == hit)
      snap = sc.bytes;
  const int64_t snap_end = snap ? hit : -1;
  prefill_request hot;
  hot.seq = sequence_id{2};
  hot.tokens = prompt;
  hot.mode = mode;
  hot.sampling.max_tokens = 16;
  hot.hit_length = snap_end == hit ? hit : hit - 128;
  if (hot.hit_length == hit)
    hot.snapshot = snap;
  for (int64_t b = 0; b < hot.hit_length / 128; ++b)
    hot.hit_blocks.push_back(*e.export_block(cold.seq, b));
  for (int i = 1; i < repeat; ++i) { // extra rounds for profilers
    e.prefill(hot);
    e.free(hot.seq);
  }
  std::unique_ptr<rank_engine> second;
  if (fresh_hot) { // like a server whose hot request lands on another rank than the cold one
    second = rank_engine::load(dir, cfg).engine;
    if (!second)
      return 1;
  }
  auto& he = fresh_hot ? *second : e;
  t0 = clock_now();
  auto begun = he.begin_prefill(hot);
  const double begin_s = seconds_since(t0);
  t0 = clock_now();
  auto ph = he.prefill_step(hot.seq, n);
  const double step_s = seconds_since(t0);
  t0 = clock_now();
  auto hot_export = he.export_sequence(hot.seq);
  const double hot_export_s = seconds_since(t0);
  const bool same = begun.status == engine_status::ok && ph.done && pc.done &&
                    ph.first.id == pc.first.id && ph.logits == pc.logits;
  std::printf("tokens=%lld snapshot_end=%lld hit=%lld snapshot=%s mode=%s\n", static_cast<long long>(n),
              static_cast<long long>(snap_end),
              static_cast<long long>(hot.hit_length), hot.snapshot ? "yes" : "no",
              mode == decoder_mode::exact ? "exact" : "bounded");
  std::printf("cold: prefill %.1f ms, export %.1f ms (%zu bytes)\n", cold_s * 1e3,
              cold_export_s * 1e3, cold_export ? cold_export->size() : 0);
  std::printf("hot:  begin (import %lld blocks) %.1f ms, prefill step %.1f ms, export %.1f ms\n",
              static_cast<long long>(hot.hit_blocks.size()), begin_s * 1e3, step_s * 1e3,
              hot_export_s * 1e3);
  std::printf("ratio (prefill+export): %.1fx; hot logits %s cold\n",
              (cold_s + cold_export_s) / (begin_s + step_s + hot_export_s),
              same ? "==" : "!=");
  return same || mode != decoder_mode::exact ? 0 : 1;
}
