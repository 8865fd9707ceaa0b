#include "balancers/vision_balancer.hpp"

namespace deepinfer::balancers {

const char* to_string(vision_policy p) {
  return p == vision_policy::patches ? "patches" : "round_robin";
}

vision_balancer::vision_balancer(const config& cfg)
    : cfg_(cfg), rng_(cfg.seed), in_flight_(static_cast<size_t>(cfg.machines * cfg.cards_per_machine), 0) {}

int64_t vision_balancer::patches(int64_t width, int64_t height, int patch) {
  return (width / patch) * (height / patch);
}

vision_balancer::pick vision_balancer::route(int64_t width, int64_t height) {
  std::uniform_int_distribution<int> machine_dist(0, cfg_.machines - 1);
  pick p;
  p.patches = patches(width, height, cfg_.patch);
  if (cfg_.policy == vision_policy::round_robin) {
    const auto at = next_++ % in_flight_.size();
    p.machine = static_cast<int>(at) / cfg_.cards_per_machine;
    p.card = static_cast<int>(at) % cfg_.cards_per_machine;
    in_flight_[at] += p.patches;
    return p;
  }
  p.machine = machine_dist(rng_);
  for (int c = 1; c < cfg_.cards_per_machine; ++c)
    if (in_flight(p.machine, c) < in_flight(p.machine, p.card))
      p.card = c;
  in_flight_[static_cast<size_t>(p.machine * cfg_.cards_per_machine + p.card)] += p.patches;
  return p;
}

void vision_balancer::done(const pick& p) {
  in_flight_[static_cast<size_t>(p.machine * cfg_.cards_per_machine + p.card)] -= p.patches;
}

int64_t vision_balancer::in_flight(int machine, int card) const {
  return in_flight_[static_cast<size_t>(machine * cfg_.cards_per_machine + card)];
}

} // namespace deepinfer::balancers
