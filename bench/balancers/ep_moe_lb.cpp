// bench_ep_moe_lb: moe_lb of the expert-parallel placer (DESIGN §6.4) under a Zipf-skewed,
// slowly drifting expert popularity, beside no redundancy.
//
// Popularity: expert e has log-weight x_e, starting at -s * ln(rank_e) for a random permutation of
// ranks 1..E (Zipf exponent s). Every step x_e follows an Ornstein-Uhlenbeck drift
// x_e += theta * (x0_e - x_e) + sigma * N(0, 1), so popularity wanders slowly around the Zipf base.
// Per step, expert e receives Poisson(tokens * top_k * p_e) routed tokens. moe_lb per step =
// max rank load / mean, each expert's tokens split evenly over its replicas (round-robin routing).
// Reported: mean and p99 over the steps after the first re-placement (warm-up), for
//   static     : initial placement, no redundancy, never re-placed;
//   dynamic-0  : re-placed every M steps from the last N, no redundant slot;
//   dynamic-R  : re-placed every M steps with R redundant slots per rank.
//
//   bench_ep_moe_lb [--zipf S] [--sigma X] [--theta X] [--seed N]
#include "balancers/ep_placer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using deepinfer::balancers::ep_placer;

namespace {

struct scenario {
  const char* name;
  int experts, ranks, redundant, window, interval;
  double tokens_per_step; // tokens in one step of the whole instance
  int top_k;
  int measured_steps;
};

struct popularity {
  std::vector<double> base, x;
  double theta, sigma;
  std::normal_distribution<double> n01{0.0, 1.0};

  popularity(int experts, double zipf, double th, double sg, std::mt19937_64& rng) : theta(th), sigma(sg) {
    std::vector<int> rank(static_cast<size_t>(experts));
    std::iota(rank.begin(), rank.end(), 1);
    std::shuffle(rank.begin(), rank.end(), rng);
    for (const int r : rank)
      base.push_back(-zipf * std::log(static_cast<double>(r)));
    x = base;
  }
  void drift(std::mt19937_64& rng) {
    for (size_t e = 0; e < x.size(); ++e)
      x[e] += theta * (base[e] - x[e]) + sigma * n01(rng);
  }
  std::vector<double> probs() const {
    std::vector<double> p(x.size());
    double sum = 0.0;
    for (size_t e = 0; e < x.size(); ++e)
      sum += (p[e] = std::exp(x[e]));
    for (auto& v : p)
      v /= sum;
    return p;
  }
};

struct outcome {
  double mean = 0.0, p99 = 0.0, expected = 0.0;
};

outcome run(const scenario& sc, int redundant, bool dynamic, double zipf, double theta, double sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  popularity pop(sc.experts, zipf, theta, sigma, rng);
  ep_placer placer({.experts = sc.experts, .ranks = sc.ranks, .redundant_per_rank = redundant,
                    .window = sc.window, .interval = dynamic ? sc.interval : 1 << 30});
  std::vector<double> lbs;
  double expected_sum = 0.0;
  const int warmup = sc.interval;
  std::vector<double> load(static_cast<size_t>(sc.experts));
  for (int step = 0; step < warmup + sc.measured_steps; ++step) {
    pop.drift(rng);
    const auto p = pop.probs();
    const double assignments = sc.tokens_per_step * sc.top_k;
    for (size_t e = 0; e < load.size(); ++e)
      load[e] = static_cast<double>(std::poisson_distribution<int64_t>(assignments * p[e])(rng));
    if (step >= warmup) {
      lbs.push_back(ep_placer::moe_lb(placer.rank_load(load)));
      std::vector<double> mean_load(p.size());
      for (size_t e = 0; e < p.size(); ++e)
        mean_load[e] = p[e] * assignments;
      expected_sum += ep_placer::moe_lb(placer.rank_load(mean_load));
    }
    placer.record_step(load);
  }
  outcome o;
  o.mean = std::accumulate(lbs.begin(), lbs.end(), 0.0) / static_cast<double>(lbs.size());
  std::sort(lbs.begin(), lbs.end());
  o.p99 = lbs[static_cast<size_t>(0.99 * static_cast<double>(lbs.size() - 1))];
  o.expected = expected_sum / static_cast<double>(sc.measured_steps);
  return o;
}

} // namespace

int main(int argc, char** argv) {
  double zipf = 0.6, sigma = 0.001, theta = 1e-4;
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--zipf")) zipf = std::stod(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--sigma")) sigma = std::stod(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--theta")) theta = std::stod(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed")) seed = std::stoull(argv[i + 1]);
  }
  // Decode EP64: 64 ranks x 64 requests x 3 verified tokens (MTP) per step; N=1000, M=10000.
  // Prefill EP4: 4 ranks x 16K-token chunks per step; N=100, M=1000.
  const scenario scenarios[] = {
      {"decode EP64, 384 experts", 384, 64, 1, 1000, 10000, 64.0 * 64 * 3, 8, 30000},
      {"prefill EP4, 256 experts", 256, 4, 4, 100, 1000, 4.0 * 16384, 8, 10000},
  };
  std::printf("zipf s=%.2f, OU drift sigma=%.4g theta=%.4g per step, seed=%llu\n", zipf, sigma, theta,
              static_cast<unsigned long long>(seed));
  std::printf("| scenario | placement | moe_lb mean | moe_lb p99 | moe_lb of expected loads |\n|---|---|---|---|---|\n");
  for (const auto& sc : scenarios) {
    const struct {
      const char* label;
      int redundant;
      bool dynamic;
    } variants[] = {{"static, no redundancy", 0, false}, {"re-placed, no redundancy", 0, true},
                    {"re-placed + redundant", sc.redundant, true}};
    for (const auto& v : variants) {
      const auto o = run(sc, v.redundant, v.dynamic, zipf, theta, sigma, seed);
      std::printf("| %s | %s (%d/rank) | %.4f | %.4f | %.4f |\n", sc.name, v.label, v.redundant, o.mean, o.p99, o.expected);
      std::fflush(stdout);
    }
  }
  return 0;
}
