#include "balancers/sim/vision_sim.hpp"

#include <algorithm>
#include <queue>
#include <random>
#include <vector>

#include "balancers/sim/stats.hpp"
#include "balancers/vision_balancer.hpp"

namespace deepinfer::balancers::sim {

vision_sim_result run_vision_sim(const vision_sim_config& cfg, vision_policy policy) {
  const int cards = cfg.machines * cfg.cards_per_machine;
  vision_balancer balancer({cfg.machines, cfg.cards_per_machine, cfg.patch, cfg.seed * 7 + 1});
  // The workload stream is separate from the balancer's, so both policies see the same images.
  std::mt19937_64 rng(cfg.seed);
  std::exponential_distribution<double> gap(cfg.rate);
  std::bernoulli_distribution large(cfg.large_share);
  std::vector<double> card_free(static_cast<std::size_t>(cards), 0.0);
  // Encodes that end later, by end time: their patches leave the card then.
  using finish = std::pair<double, vision_balancer::pick>;
  auto later = [](const finish& a, const finish& b) { return a.first > b.first; };
  std::priority_queue<finish, std::vector<finish>, decltype(later)> running(later);
  std::vector<float> queue;
  queue.reserve(static_cast<std::size_t>(cfg.images));
  double t = 0, busy = 0, sum = 0;
  int next = 0;
  for (int64_t i = 0; i < cfg.images; ++i) {
    t += gap(rng);
    const int side = large(rng) ? cfg.large_side : cfg.small_side;
    while (!running.empty() && running.top().first <= t) {
      balancer.done(running.top().second);
      running.pop();
    }
    vision_balancer::pick p;
    if (policy == vision_policy::patches) {
      p = balancer.route(side, side);
    } else {
      p = {next / cfg.cards_per_machine, next % cfg.cards_per_machine, vision_balancer::patches(side, side, cfg.patch)};
      next = (next + 1) % cards;
    }
    auto& free_at = card_free[static_cast<std::size_t>(p.machine * cfg.cards_per_machine + p.card)];
    const double start = std::max(t, free_at);
    const auto patches = static_cast<double>(p.patches);
    const double service = cfg.fixed_s + cfg.per_patch_s * patches + cfg.per_patch2_s * patches * patches;
    free_at = start + service;
    busy += service;
    if (policy == vision_policy::patches)
      running.push({free_at, p});
    queue.push_back(static_cast<float>(start - t));
    sum += start - t;
  }
  vision_sim_result r;
  r.policy = policy;
  r.images = cfg.images;
  r.queue_mean_s = sum / static_cast<double>(cfg.images);
  r.queue_p50_s = percentile(queue, 50);
  r.queue_p99_s = percentile(queue, 99);
  double end = t;
  for (double f : card_free)
    end = std::max(end, f);
  r.utilization = busy / (end * cards);
  return r;
}

} // namespace deepinfer::balancers::sim
