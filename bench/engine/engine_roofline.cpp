// bench_engine_roofline MODEL_DIR [--contexts 8192,32768] [--batches 1,8,64] [--threads 2] [--cpu-time 1]
// This machine's roofline (sgemm GFLOP/s, memory bandwidth) and, in the same run, the engine's
// prefill tokens/s (no hit vs a 96 % hit) and decode tokens/s, each as a fraction of it.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/flops.hpp"
#include "engine/rank_engine.hpp"

#include "bench_clock.hpp"
#include "bench_inputs.hpp"

using namespace deepinfer::engine;
using deepinfer::bench::parse_list;
using deepinfer::bench::random_prompt;
using deepinfer::bench::seconds_since;
using deepinfer::bench::use_cpu_time;

namespace {

double sgemm_gflops(int m, int n, int k, int reps) {
  std::vector<float> a(static_cast<std::size_t>(m) * k, 0.5f), b(static_cast<std::size_t>(n) * k, 0.25f),
      c(static_cast<std::size_t>(m) * n);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = deepinfer::bench::clock_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, b.data(), k,
                0.0f, c.data(), n);
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * m * n * k / best / 1e9;
}

double read_bandwidth_gbs() {
  const std::size_t n = std::size_t{256} << 20; // 1 GiB of floats
  std::vector<float> a(n / 4, 1.0f);
  double best = 1e30;
  volatile float sink = 0;
  for (int r = 0; r < 3; ++r) {
    auto t0 = deepinfer::bench::clock_now();
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (std::size_t i = 0; i + 4 <= a.size(); i += 4) {
      s0 += a[i];
      s1 += a[i + 1];
      s2 += a[i + 2];
      s3 += a[i + 3];
    }
    sink = s0 + s1 + s2 + s3;
    best = std::min(best, seconds_since(t0));
  }
  (void)sink;
  return static_cast<double>(a.size() * sizeof(float)) / best / 1e9;
}



} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_engine_roofline MODEL_DIR [--contexts A,B] [--batches A,B] [--threads N] [--cpu-time 1]\n");
    return 2;
  }
  std::string dir = argv[1];
  std::vector<int64_t> contexts{8192, 32768}, batches{1, 8, 64};
  int threads = 2;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--contexts")
      contexts = parse_list(argv[i + 1]);
    else if (a == "--batches")
      batches = parse_list(argv[i + 1]);
    else if (a == "--threads")
      threads = std::stoi(argv[i + 1]);
    else if (a == "--cpu-time" && std::string{argv[i + 1]} == "1") {
      use_cpu_time = true;
      threads = 1;
      openblas_set_num_threads(1);
    }
  }
  std::printf("clock: %s, engine threads %d\n", use_cpu_time ? "process CPU time, 1 core" : "wall", threads);
  int64_t max_ctx = *std::max_element(contexts.begin(), contexts.end());
  int64_t max_b = *std::max_element(batches.begin(), batches.end());
  auto loaded = rank_engine::load(dir, rank_engine::config{2 * (max_ctx / 128) + max_b * 10 + 16, threads, {}});
  if (!loaded.engine) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    return 1;
  }
  auto& e = *loaded.engine;
  const auto& c = e.model();
  // 1. roofline
  const double peak = sgemm_gflops(2048, 2048, 2048, 3);
  const double shape = sgemm_gflops(4096, c.hidden * 2, c.hidden, 5);
  const double bw = read_bandwidth_gbs();
  std::printf("roofline: sgemm 2048^3 %.1f GFLOP/s; sgemm prefill shape (4096 x %d x %d) %.1f GFLOP/s; "
              "read bandwidth %.1f GB/s\n", peak, c.hidden * 2, c.hidden, shape, bw);
  // 2. prefill: no hit vs 96 % hit (blocks imported + snapshot)
  uint64_t next = 1;
  for (auto len : contexts) {
    auto prompt = random_prompt(len, static_cast<uint64_t>(len), c.vocab_size);
    prefill_request req;
    req.seq = sequence_id{next++};
    req.tokens = prompt;
    const auto s0 = e.compute().stats();
    auto t0 = deepinfer::bench::clock_now();
    auto p = e.prefill(req);
    double t_miss = seconds_since(t0);
    const auto s1 = e.compute().stats();
    const double gemm_gflops = (s1.flops - s0.flops) / (s1.seconds - s0.seconds) / 1e9;
    if (p.status != engine_status::ok) {
      std::fprintf(stderr, "prefill failed: %s\n", p.error.c_str());
      return 1;
    }
    const int64_t h = (len * 96 / 100) / 128 * 128;
    prefill_request prod;
    prod.seq = sequence_id{next++};
    prod.tokens.assign(prompt.begin(), prompt.begin() + h + 1);
    e.prefill(prod); // leaves the snapshot at h
    prefill_request hit;
    hit.seq = sequence_id{next++};
    hit.tokens = prompt;
    hit.hit_length = h;
    hit.snapshot = e.export_snapshot(prod.seq);
    for (int64_t b = 0; b < h / 128; ++b)
      hit.hit_blocks.push_back(*e.export_block(req.seq, b));
    e.free(prod.seq);
    t0 = deepinfer::bench::clock_now();
    auto q = e.prefill(hit);
    double t_hit = seconds_since(t0);
    if (q.status != engine_status::ok) {
      std::fprintf(stderr, "hit prefill failed: %s\n", q.error.c_str());
      return 1;
    }
    const double fl = flops::prefill(c, len, std::min<int64_t>(len, c.window));
    const double gemm = flops::prefill_gemm(c, len, std::min<int64_t>(len, c.window));
    std::printf("prefill L=%lld: no hit %.2f s = %.0f tok/s, %.1f GFLOP/s (%.0f %% of sgemm peak; "
                "gemm share %.0f %%); 96%% hit (h=%lld, import+snapshot) %.3f s = %.0f prompt tok/s "
                "(x%.1f)\n  prefill GEMMs: %.1f GFLOP/s = %.0f %% of sgemm peak, %.0f %% of prefill time\n",
                static_cast<long long>(len), t_miss, len / t_miss, fl / t_miss / 1e9,
                100 * fl / t_miss / 1e9 / peak, 100 * gemm / fl, static_cast<long long>(h), t_hit,
                len / t_hit, t_miss / t_hit, gemm_gflops, 100 * gemm_gflops / peak,
                100 * (s1.seconds - s0.seconds) / t_miss);
    std::fflush(stdout);
    e.free(req.seq);
    e.free(hit.seq);
  }
  // 3. decode: batch B at context 1024
  for (auto b : batches) {
    std::vector<sequence_id> ids;
    for (int64_t i = 0; i < b; ++i) {
      prefill_request r;
      r.seq = sequence_id{next++};
      r.tokens = random_prompt(1024, 7000 + static_cast<uint64_t>(i), c.vocab_size);
      r.sampling.max_tokens = 1 << 20;
      e.prefill(r);
      ids.push_back(r.seq);
    }
    e.decode_step(ids); // warm
    const int steps = 8;
    auto t0 = deepinfer::bench::clock_now();
    for (int s = 0; s < steps; ++s)
      e.decode_step(ids);
    double t = seconds_since(t0) / steps;
    // Bytes a step must read: the lm_head, every attention/router/shared weight, the routed
    // experts the batch touches (at most all), and the KV windows + indexer keys.
    const double h = c.hidden, f = c.expert_ffn;
    const double attn = 2 * h * (c.heads * c.head_dim + 2 * c.kv_heads * c.head_dim) * 4;
    const double layers = c.encoder_layers + c.decoder_layers;
    const double experts = std::min<double>(c.routed_experts, static_cast<double>(b) * c.experts_per_token);
    const double per_layer = attn + 4 * h * c.routed_experts + (experts + c.shared_experts) * 3 * h * f * 4;
    const double bytes = layers * per_layer + c.decoder_layers * 2 * h * c.heads * c.head_dim * 4 +
                         4 * h * c.vocab_size + static_cast<double>(b) * 1024 * c.kv_floats_per_token() * 4;
    std::printf("decode batch %lld (ctx 1024): %.1f ms/step = %.0f tok/s; weights+KV %.0f MB/step = "
                "%.1f GB/s (%.0f %% of read bandwidth)\n",
                static_cast<long long>(b), t * 1e3, static_cast<double>(b) / t, bytes / 1e6,
                bytes / t / 1e9, 100 * bytes / t / 1e9 / bw);
    std::fflush(stdout);
    for (auto id : ids)
      e.free(id);
  }
  return 0;
}
