// bench_engine_short MODEL_DIR [--lengths 16,50,200,1000] [--runs 50] [--cpu-isa auto] [--gap-ms 0]
// What a short prompt's prefill costs on one warm core, and in which forward stage: each length's
// prompts (fresh ids, no hit) prefilled whole, `runs` times; the median wall time and the mean
// of each stage. A short prompt runs beside a long one in the same prefill rank, so its cost is
// what it adds to the long prompt's time to first token. `--gap-ms N` sleeps N ms before each
// prefill, as a prompt arriving on an idle core: whatever else the machine runs (an image
// encoder under SCHED_IDLE, say) takes the core meanwhile and leaves its caches to the prefill.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/rank_engine.hpp"

#include "bench_clock.hpp"
#include "bench_inputs.hpp"
#include "bench_stages.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::bench;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_engine_short MODEL_DIR [--lengths 16,50,200,1000] [--runs 50] [--cpu-isa auto] "
                         "[--gap-ms 0]\n");
    return 2;
  }
  std::vector<int64_t> lengths{16, 50, 200, 1000};
  int64_t runs = 50;
  int64_t gap_ms = 0;
  std::string isa_name = "auto";
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--lengths")
      lengths = parse_list(v);
    else if (a == "--runs")
      runs = std::max<int64_t>(1, std::stoll(v));
    else if (a == "--cpu-isa")
      isa_name = v;
    else if (a == "--gap-ms")
      gap_ms = std::max<int64_t>(0, std::stoll(v));
  }
  rank_engine::config cfg;
  cfg.threads = 1;
  cfg.isa = cpu_isa_or_exit(isa_name);
  // One prompt at a time: the longest one's blocks, and the warm-up's.
  cfg.kv_blocks = *std::max_element(lengths.begin(), lengths.end()) / 128 + 8;
  auto e = load_or_exit(argv[1], cfg);
  std::printf("cpu: %s, isa %s, one thread\n", kernels::cpu_feature_summary().c_str(), kernels::to_string(*cfg.isa));
  uint64_t next = 1;
  auto prefill = [&](int64_t n) {
    prefill_request r;
    r.seq = sequence_id{next};
    r.tokens = random_prompt(n, next * 7919);
    r.mode = decoder_mode::bounded;
    r.sampling.max_tokens = 1;
    ++next;
    if (gap_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds{gap_ms});
    const double t0 = clock_now();
    auto p = e->prefill(r);
    const double s = seconds_since(t0);
    if (p.status != engine_status::ok) {
      std::fprintf(stderr, "the engine refused a %lld-token prefill\n", static_cast<long long>(n));
      std::exit(1);
    }
    e->free(r.seq);
    return s;
  };
  for (int k = 0; k < 5; ++k) // the weights and the pool's pages touched once
    prefill(257);
  std::printf("| prompt tokens | median ms | ");
  for (const char* n : stage_ms::names)
    std::printf("%s | ", n);
  std::printf("\n|---|---|");
  for (int i = 0; i < stage_ms::count; ++i)
    std::printf("---|");
  std::printf("\n");
  for (int64_t n : lengths) {
    std::vector<double> ms;
    const auto before = read_stages(*e);
    for (int64_t k = 0; k < runs; ++k)
      ms.push_back(prefill(n) * 1e3);
    const auto after = read_stages(*e);
    std::sort(ms.begin(), ms.end());
    std::printf("| %lld | %.2f | ", static_cast<long long>(n), ms[ms.size() / 2]);
    for (int i = 0; i < stage_ms::count; ++i)
      std::printf("%.2f | ", (after.v[i] - before.v[i]) / static_cast<double>(runs));
    std::printf("\n");
  }
  return 0;
}
