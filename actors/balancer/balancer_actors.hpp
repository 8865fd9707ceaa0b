#pragma once

#include <chrono>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"
#include "actors/balancer/balancer_metrics.hpp"
#include "balancers/serving_router.hpp"

namespace deepinfer::actors {


/// What the cluster's two balancer actors run with (built by launcher/ from `[balancer.*]`).
struct balancer_actors_config {
  /// The placement policy (buckets, quota per rank, decode batch limit).
  balancers::serving_router::config router;
  /// How often the prefill balancer starts a new round (buckets re-divided by demand).
  std::chrono::milliseconds round{1000};
  /// Where each balancer publishes its per-rank loads (for /metrics; made once by the
  /// controller, so a restarted balancer writes to the same gauges).
  std::shared_ptr<balancer_loads> prefill_loads = std::make_shared<balancer_loads>();
  std::shared_ptr<balancer_loads> decode_loads = std::make_shared<balancer_loads>();
  /// What arrives at the prefill balancer, for the controller's autoscaler.
  std::shared_ptr<prefill_demand> demand = std::make_shared<prefill_demand>();
};

/// Spawns the prefill balancer: it keeps the bucketed queue of `serving_router` and answers a
/// `place` when an instance with quota left pulls the job. Its state is soft: after a restart
/// it starts empty and every request waiting on the old one asks again.
prefill_balancer_actor spawn_prefill_balancer(caf::actor_system& sys, const balancer_actors_config& cfg);

/// Spawns the decode balancer over every decode rank of the view, each sized by its KV pool;
/// requests report their KV growth (`grow`), which also rebuilds its state after a restart.
decode_balancer_actor spawn_decode_balancer(caf::actor_system& sys, const balancer_actors_config& cfg);

} // namespace deepinfer::actors
