#include "actors/entrypoint/vision_router.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>

#include "actors/log.hpp"

namespace deepinfer::actors {

vision_router::vision_router(int patch, http::metrics_registry::family<http::metrics_registry::gauge>* in_flight,
                             balancers::vision_policy policy)
    : patch_(patch), policy_(policy), gauge_(in_flight) {}

std::optional<vision_router::route> vision_router::pick(const std::vector<live_instance>& vision, int64_t width,
                                                        int64_t height) {
  std::lock_guard guard{mtx_};
  // 1. The machines now: one per node with live vision ranks (several instances of a node pool).
  std::vector<std::pair<std::string, std::vector<caf::actor_addr>>> shape;
  std::vector<std::vector<caf::strong_actor_ptr>> ranks;
  for (const auto& inst : vision) {
    auto it = std::find_if(shape.begin(), shape.end(), [&](const auto& m) { return m.first == inst.node; });
    if (it == shape.end()) {
      shape.emplace_back(inst.node, std::vector<caf::actor_addr>{});
      ranks.emplace_back();
      it = shape.end() - 1;
    }
    auto& handles = ranks[static_cast<std::size_t>(it - shape.begin())];
    for (const auto& h : inst.rank_handles)
      if (h) {
        it->second.push_back(caf::actor_cast<caf::actor_addr>(h));
        handles.push_back(h);
      }
  }
  std::erase_if(shape, [](const auto& m) { return m.second.empty(); });
  std::erase_if(ranks, [](const auto& r) { return r.empty(); });
  if (shape.empty())
    return std::nullopt;
  // 2. Another set of ranks: a fresh balancer. Cards per machine are the smallest machine's
  // rank count (the balancer assumes equal machines; the launch plan gives each the same).
  if (shape != shape_ || !balancer_) {
    std::size_t cards = ranks.front().size();
    for (const auto& r : ranks)
      cards = std::min(cards, r.size());
    balancers::vision_balancer::config cfg;
    cfg.machines = static_cast<int>(shape.size());
    cfg.cards_per_machine = static_cast<int>(cards);
    cfg.patch = patch_;
    cfg.seed = ++generation_ * 0x9e3779b97f4a7c15ull;
    cfg.policy = policy_;
    balancer_.emplace(cfg);
    shape_ = std::move(shape);
    ranks_ = std::move(ranks);
  }
  route r;
  r.pick = balancer_->route(width, height);
  r.rank = ranks_[static_cast<std::size_t>(r.pick.machine)][static_cast<std::size_t>(r.pick.card)];
  r.generation = generation_;
  publish(r.pick);
  log().debug("vision route node={} rank={} patches={} in_flight={} policy={} generation={}",
              shape_[static_cast<std::size_t>(r.pick.machine)].first, r.pick.card, r.pick.patches,
              balancer_->in_flight(r.pick.machine, r.pick.card), balancers::to_string(policy_), generation_);
  return r;
}

void vision_router::done(const route& r) {
  std::lock_guard guard{mtx_};
  // A route of an older balancer: its counts are gone with it.
  if (r.generation != generation_ || !balancer_)
    return;
  balancer_->done(r.pick);
  publish(r.pick);
}

void vision_router::publish(const balancers::vision_balancer::pick& p) {
  if (!gauge_)
    return;
  gauge_->with({shape_[static_cast<std::size_t>(p.machine)].first, std::to_string(p.card)})
    .set(static_cast<double>(balancer_->in_flight(p.machine, p.card)));
}

} // namespace deepinfer::actors
