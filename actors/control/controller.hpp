#pragma once

#include <chrono>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/balancer/balancer_actors.hpp"
#include "actors/interfaces.hpp"
#include "balancers/autoscaler.hpp"

namespace deepinfer::actors {

namespace http {
class metrics_registry;
}

/// The controller's autoscaler (issue 17, DESIGN §6.5; manifest `[autoscaler]`).
struct autoscaler_settings {
  /// The policy: bounds, per-instance capacities, headroom, steps, the 0.8 quota rule, grace.
  balancers::autoscaler::config policy;
  /// One decision per interval; 0: no autoscaler (the embedded default; a manifest's
  /// `interval_seconds` turns it on).
  std::chrono::milliseconds interval{0};
  /// Where `deepinfer_autoscaler_target{role}` and `deepinfer_ready_pool_nodes` go (optional).
  std::shared_ptr<http::metrics_registry> metrics;
};

/// Spawns the controller: it keeps the membership view (see `membership`), monitors the agent of
/// every registered node (a SIGKILLed peer is reported by CAF within milliseconds; a frozen one
/// only through middleman heartbeats) and pushes the view to every live agent on each change.
/// It runs the cluster's prefill and decode balancers (supervised: one that dies is started
/// again, its soft state rebuilt) and names them in the view.
///
/// With an autoscaler interval it decides every interval from what the balancers saw (missed
/// tokens, prefill queue time and quota use, decode requests in flight) and reaches the targets
/// through the ready pool: an idle pool node is assigned an instance on scale-up, a pool instance
/// drains (decode: with the grace period, its requests handed off with their KV) and returns its
/// node to the pool on scale-down. Every decision is logged at info.
controller_actor spawn_controller(caf::actor_system& sys, const balancer_actors_config& balancers = {},
                                  autoscaler_settings autoscaler = {});

} // namespace deepinfer::actors
