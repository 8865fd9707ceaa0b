#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"
#include "actors/instance/rank.hpp"
#include "engine/ep/ep_rank.hpp"

namespace deepinfer::actors {

/// Configuration of one instance supervisor.
struct instance_supervisor_config {
  std::string instance;  ///< unique name, `<node>/<role>`
  std::string node;
  node_role role = node_role::prefill;  ///< prefill | decode | vision
  uint32_t ranks = 1;    ///< ranks of the first generation (the EP size)
  /// Pause between taking a failed generation down and starting the next one.
  std::chrono::milliseconds restart_delay{50};
  /// The engine every rank loads (empty model: idle ranks).
  rank_engine_config engine;
  /// The EP group of an instance of several ranks with a model (redundant slots, window,
  /// re-placement interval: the manifest's `[balancer.*]` EP keys).
  engine::ep_settings ep = engine::ep_settings::decode();
  /// Decode: how long a drain notice lets the ranks decode on before they hand their sequences
  /// to other instances (`[autoscaler] decode_grace_seconds`).
  std::chrono::milliseconds drain_grace{60000};
};

/// Spawns the supervisor of one instance and its first generation of ranks. An instance is one
/// communication domain: when any rank fails, every rank of that generation is stopped and a new
/// generation starts with the ranks that were healthy (EP = healthy ranks), its experts placed
/// over them from the last group's loads; a rank failed for a while (`down_ms`) is counted back
/// when it is healthy again, and the instance grows to its configured size. Every state change is
/// sent as `(report, instance_status)` to `observer` (the node agent), when it is set.
instance_supervisor_actor spawn_instance_supervisor(caf::actor_system& sys,
                                                    const instance_supervisor_config& cfg,
                                                    node_agent_actor observer);

} // namespace deepinfer::actors
