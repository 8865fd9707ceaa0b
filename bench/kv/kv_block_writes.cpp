// bench_kv_block_writes [--batch 8] [--prompt 1024] [--tokens 384] [--fsync 0|1] [--threads 1]
// The decode rank thread's time per step with the block writes inline (before issue 17: every
// full block of a sequence, prompt and output, written by `prefix_cache::store` on the step that
// ends it) against the writes off the thread (issue 17: the prompt's blocks queued when the
// sequence arrives, each output block as it fills, `store_async`; the rank only exports the
// bytes). One batch of `batch` sequences on the tiny random model, ending staggered (sequence i
// decodes tokens - 16 i), the same run for both, each on a fresh store. Prints the step times
// (p50, p99, max) and the rank thread's time spent storing, per mode.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/model/model_config.hpp"
#include "engine/model/random_model.hpp"
#include "engine/rank_engine.hpp"
#include "engine/testing/random_tokens.hpp"
#include "kv/prefix_cache.hpp"

using namespace deepinfer;
using clk = std::chrono::steady_clock;

namespace {

double ms_since(clk::time_point t0) { return std::chrono::duration<double, std::milli>(clk::now() - t0).count(); }

double quantile(std::vector<double> v, double q) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

struct figures {
  std::vector<double> steps; ///< decode step + the rank's storing after it, ms
  double receive_ms = 0;     ///< storing when the sequences arrive (async mode only)
  double store_ms = 0;       ///< all storing on the rank thread
  double drain_ms = 0;       ///< the writer finishing after the last step (async mode only)
  uint64_t blocks = 0;
};

figures run(engine::rank_engine& e, const std::string& root, const std::string& fingerprint, bool async,
            bool fsync, int batch, int64_t prompt_len, int tokens) {
  kv::prefix_cache::config pc;
  pc.root = root;
  pc.fingerprint = fingerprint;
  pc.fsync = fsync;
  std::string err;
  auto cache = kv::prefix_cache::open(pc, &err);
  if (!cache) {
    std::fprintf(stderr, "%s\n", err.c_str());
    std::exit(1);
  }
  figures f;
  std::vector<engine::sequence_id> live;
  std::map<uint64_t, int64_t> stored; // blocks [0, n) stored or queued, per sequence
  auto store_filled = [&](engine::sequence_id s) {
    auto t = e.tokens(s);
    const auto full = static_cast<int64_t>(t.size() - 1) / 128;
    auto& from = stored[s.value];
    if (full <= from)
      return;
    f.blocks += static_cast<uint64_t>(full - from);
    from = cache->store_async(t, from, full, [&](int64_t i) { return e.export_block(s, i); });
  };
  for (int i = 0; i < batch; ++i) {
    engine::prefill_request req;
    req.seq = engine::sequence_id{static_cast<uint64_t>(i + 1)};
    req.tokens = engine::testing::random_tokens(prompt_len, 100 + static_cast<uint64_t>(i), 129280);
    req.sampling.max_tokens = tokens - 16 * i;
    auto p = e.prefill(req);
    if (p.status != engine::engine_status::ok) {
      std::fprintf(stderr, "prefill failed: %s\n", p.error.c_str());
      std::exit(1);
    }
    live.push_back(req.seq);
  }
  if (async) {
    const auto t0 = clk::now();
    for (auto s : live)
      store_filled(s);
    f.receive_ms = ms_since(t0);
    f.store_ms += f.receive_ms;
  }
  while (!live.empty()) {
    const auto t0 = clk::now();
    auto outs = e.decode_step(live);
    double storing = 0;
    std::vector<engine::sequence_id> next;
    for (const auto& o : outs) {
      const auto ts = clk::now();
      if (o.finished) {
        if (async)
          store_filled(o.seq);
        else {
          auto t = e.tokens(o.seq);
          const auto full = static_cast<int64_t>(t.size() - 1) / 128;
          f.blocks += static_cast<uint64_t>(
            cache->store(t, full, [&](int64_t i) { return e.export_block(o.seq, i); }));
        }
        e.free(o.seq);
      } else {
        if (async)
          store_filled(o.seq);
        next.push_back(o.seq);
      }
      storing += ms_since(ts);
    }
    f.store_ms += storing;
    f.steps.push_back(ms_since(t0));
    live = std::move(next);
  }
  const auto t1 = clk::now();
  cache->flush_writes();
  f.drain_ms = ms_since(t1);
  return f;
}

} // namespace

int main(int argc, char** argv) {
  int batch = 8, tokens = 384, threads = 1;
  int64_t prompt = 1024;
  bool fsync = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--batch")
      batch = std::stoi(v);
    else if (a == "--prompt")
      prompt = std::stoll(v);
    else if (a == "--tokens")
      tokens = std::stoi(v);
    else if (a == "--fsync")
      fsync = v != "0";
    else if (a == "--threads")
      threads = std::stoi(v);
  }
  const auto tmp = std::filesystem::temp_directory_path() / ("bench-kv-block-writes-" + std::to_string(::getpid()));
  const auto model_dir = (tmp / "model").string();
  auto cfg = engine::model_config::tiny();
  if (auto err = engine::random_model::write(cfg, 7, model_dir); !err.empty()) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  engine::rank_engine::config ec;
  ec.threads = threads;
  ec.kv_blocks = batch * ((prompt + tokens) / 128 + 2);
  auto loaded = engine::rank_engine::load(model_dir, ec);
  if (!loaded.engine) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    return 1;
  }
  std::printf("batch %d, prompt %lld, up to %d tokens each, fsync %d, %d compute thread(s)\n", batch,
              static_cast<long long>(prompt), tokens, fsync ? 1 : 0, threads);
  std::printf("%-28s %9s %9s %9s %12s %11s %10s %7s\n", "mode", "step p50", "step p99", "step max",
              "rank storing", "at receive", "writer end", "blocks");
  // Twice each, alternating: the first pair warms the page cache and the allocator.
  for (int round = 0; round < 2; ++round)
    for (bool async : {false, true}) {
      const auto root = (tmp / ("kv-" + std::to_string(round) + (async ? "-async" : "-inline"))).string();
      auto f = run(*loaded.engine, root, cfg.fingerprint, async, fsync, batch, prompt, tokens);
      if (round == 0)
        continue;
      std::printf("%-28s %7.3fms %7.3fms %7.3fms %10.2fms %9.2fms %8.2fms %7llu\n",
                  async ? "off the thread (issue 17)" : "inline at release (before)", quantile(f.steps, 0.5),
                  quantile(f.steps, 0.99), quantile(f.steps, 1.0), f.store_ms, f.receive_ms, f.drain_ms,
                  static_cast<unsigned long long>(f.blocks));
    }
  std::filesystem::remove_all(tmp);
  return 0;
}
