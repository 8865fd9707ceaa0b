#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_addr.hpp>

#include "actors/control/live_instances.hpp"
#include "actors/http/metrics_registry.hpp"
#include "balancers/vision_balancer.hpp"

namespace deepinfer::actors {

/// Where the entrypoint sends each image (DESIGN §6.3, issue 21): `balancers::vision_balancer`
/// over the vision instances the membership view shows, each node a machine and each of its
/// ranks a card, so an image goes to a random vision machine and there to the rank with the
/// fewest patches in flight. Thread-safe (the request actors of an entrypoint share one). The
/// balancer is rebuilt (counts from zero) when the set of vision ranks changes.
class vision_router {
public:
  /// `patch`: the encoder's patch side (patches = (w / patch) x (h / patch)); `in_flight`:
  /// the gauge family of patches in flight per vision rank (labels node, rank; may be null);
  /// `policy`: the seeds' patch rule, or round robin over every rank (the baseline bench/
  /// measures it against, `[vision] balancer`).
  vision_router(int patch, http::metrics_registry::family<http::metrics_registry::gauge>* in_flight,
                balancers::vision_policy policy = balancers::vision_policy::patches);

  /// One image's route: the rank and what to hand back to `done`.
  struct route {
    caf::strong_actor_ptr rank;
    balancers::vision_balancer::pick pick;
    uint64_t generation = 0;
  };

  /// The rank for a width x height image (its patches now count as in flight there); nullopt
  /// when the view shows no live vision instance.
  std::optional<route> pick(const std::vector<live_instance>& vision, int64_t width, int64_t height);
  /// The image of `r` is encoded (or failed): its patches leave the rank.
  void done(const route& r);

private:
  void publish(const balancers::vision_balancer::pick& p);

  std::mutex mtx_;
  int patch_;
  balancers::vision_policy policy_;
  http::metrics_registry::family<http::metrics_registry::gauge>* gauge_;
  /// The machines the balancer was built for: node name and rank handles, in view order.
  std::vector<std::pair<std::string, std::vector<caf::actor_addr>>> shape_;
  std::vector<std::vector<caf::strong_actor_ptr>> ranks_;
  std::optional<balancers::vision_balancer> balancer_;
  uint64_t generation_ = 0;
};

} // namespace deepinfer::actors
