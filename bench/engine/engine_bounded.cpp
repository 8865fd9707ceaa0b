// bench_engine_bounded MODEL_DIR [--contexts 1024,8192,32768] [--steps 256] [--full-max 8192]
// Bounded decoder replay vs exact: next-token KL(exact || bounded) and greedy agreement over
// `steps` teacher-forced decode steps; prefill time bounded / exact / full; and the prefill
// FLOPs ratio bounded / full by formula for our configs and an assumed V4.1 shape (20+20).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/flops.hpp"
#include "engine/rank_engine.hpp"

#include "bench_clock.hpp"

#include <cblas.h>

using namespace deepinfer::engine;
using deepinfer::bench::seconds_since;
using deepinfer::bench::use_cpu_time;

namespace {

// KL(p || q) of the softmaxes of two logit rows, in nats.
double kl(const float* p, const float* q, int64_t n) {
  double mp = *std::max_element(p, p + n), mq = *std::max_element(q, q + n), zp = 0, zq = 0;
  for (int64_t i = 0; i < n; ++i) {
    zp += std::exp(p[i] - mp);
    zq += std::exp(q[i] - mq);
  }
  double lzp = std::log(zp) + mp, lzq = std::log(zq) + mq, k = 0;
  for (int64_t i = 0; i < n; ++i) {
    double lp = p[i] - lzp, lq = q[i] - lzq;
    k += std::exp(lp) * (lp - lq);
  }
  return k;
}

int64_t argmax(const float* p, int64_t n) {
  return std::max_element(p, p + n) - p;
}

model_config v41_assumed() {
  model_config c;
  c.name = "v4.1-flash (assumed shape)";
  c.hidden = 4096;
  c.encoder_layers = 20;
  c.decoder_layers = 20;
  c.heads = 32;
  c.kv_heads = 4;
  c.head_dim = 128;
  c.kv_groups = 4;
  c.index_heads = 4;
  c.index_dim = 64;
  c.index_topk = 2048;
  c.routed_experts = 256;
  c.experts_per_token = 6;
  c.shared_experts = 1;
  c.expert_ffn = 2048;
  return c;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_engine_bounded MODEL_DIR [--contexts A,B] [--steps N] [--full-max N]\n");
    return 2;
  }
  std::vector<int64_t> contexts{1024, 8192, 32768};
  int steps = 256;
  int64_t full_max = 8192;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--contexts") {
      contexts.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string x; std::getline(ss, x, ',');)
        contexts.push_back(std::stoll(x));
    } else if (a == "--steps")
      steps = std::stoi(argv[i + 1]);
    else if (a == "--full-max")
      full_max = std::stoll(argv[i + 1]);
    else if (a == "--cpu-time" && std::string{argv[i + 1]} == "1")
      use_cpu_time = true;
  }
  if (use_cpu_time)
    openblas_set_num_threads(1);
  // 1. FLOPs by formula.
  for (const auto& c : {model_config::tiny(), model_config::small(), v41_assumed()})
    for (int64_t len : {1024, 8192, 32768, 77000})
      std::printf("flops %s L=%lld: bounded/full prefill = %.3f (bounded %.3g, full %.3g FLOP)\n",
                  c.name.c_str(), static_cast<long long>(len),
                  flops::prefill(c, len, 128) / flops::prefill(c, len, len),
                  flops::prefill(c, len, 128), flops::prefill(c, len, len));
  std::fflush(stdout);
  int64_t max_ctx = *std::max_element(contexts.begin(), contexts.end());
  auto loaded = rank_engine::load(argv[1], rank_engine::config{3 * ((max_ctx + steps) / 128 + 2), use_cpu_time ? 1 : 2, {}});
  if (!loaded.engine) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    return 1;
  }
  auto& e = *loaded.engine;
  const int64_t vocab = e.model().vocab_size;
  uint64_t next = 1;
  // 2. measured: per context, exact and bounded side by side (and full where affordable).
  for (auto len : contexts) {
    std::mt19937_64 rng(static_cast<uint64_t>(len));
    prefill_request base;
    for (int64_t i = 0; i < len; ++i)
      base.tokens.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab)));
    base.sampling.max_tokens = 1 << 20;
    double t[3] = {0, 0, 0};
    std::vector<float> first[3];
    sequence_id ids[3];
    const decoder_mode modes[3] = {decoder_mode::exact, decoder_mode::bounded, decoder_mode::full};
    for (int m = 0; m < 3; ++m) {
      if (m == 2 && len > full_max)
        continue;
      auto r = base;
      r.seq = ids[m] = sequence_id{next++};
      r.mode = modes[m];
      auto t0 = deepinfer::bench::clock_now();
      auto p = e.prefill(r);
      t[m] = seconds_since(t0);
      first[m] = p.logits;
    }
    if (len <= full_max) {
      float d = 0;
      for (int64_t i = 0; i < vocab; ++i)
        d = std::max(d, std::fabs(first[0][i] - first[2][i]));
      std::printf("L=%lld exact vs full first-token max |dlogit| = %g\n", static_cast<long long>(len), d);
      e.free(ids[2]);
    }
    double kl_sum = kl(first[0].data(), first[1].data(), vocab), kl_max = kl_sum, kl_late = 0;
    int agree = argmax(first[0].data(), vocab) == argmax(first[1].data(), vocab), late = 0, n = 1;
    std::vector<sequence_id> pair{ids[0], ids[1]};
    std::vector<float> lg;
    for (int s = 0; s < steps; ++s) {
      // Teacher forcing: both feed the exact run's greedy token.
      auto tok = e.tokens(ids[0]).back();
      e.force_next_token(ids[1], tok);
      e.decode_step(pair, &lg);
      double k = kl(lg.data(), lg.data() + vocab, vocab);
      bool same = argmax(lg.data(), vocab) == argmax(lg.data() + vocab, vocab);
      kl_sum += k;
      kl_max = std::max(kl_max, k);
      agree += same;
      ++n;
      if (s >= 128) {
        kl_late += k;
        ++late;
      }
    }
    std::printf("L=%lld: prefill exact %.2f s, bounded %.2f s%s; over %d steps: mean KL %.3g nats, "
                "max KL %.3g, greedy agreement %.1f %%; steps >= 128 mean KL %.3g\n",
                static_cast<long long>(len), t[0], t[1],
                len <= full_max ? (", full " + std::to_string(t[2]) + " s").c_str() : "", n,
                kl_sum / n, kl_max, 100.0 * agree / n, late ? kl_late / late : 0.0);
    std::fflush(stdout);
    e.free(ids[0]);
    e.free(ids[1]);
  }
  return 0;
}
