#pragma once

#include <functional>
#include <memory>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "actors/control/cluster_snapshot.hpp"
#include "actors/interfaces.hpp"

namespace deepinfer::actors {

/// Configuration of a node agent.
struct node_agent_config {
  node_info self;
  /// Where the agent publishes what it learns for plain threads (HTTP /metrics).
  std::shared_ptr<cluster_snapshot> snapshot;
  /// Called (from the agent's thread) when the controller is lost or refuses registration, so
  /// the bootstrap thread reconnects. Must not block.
  std::function<void()> on_controller_lost;
  /// A ready-pool node (issue 17): starts this node's instance of a role the controller assigns,
  /// reporting to `observer` (the agent); an error when the node may not take the role. Empty:
  /// not a pool node (every `assign` is refused). Runs on the agent's thread: must not block.
  std::function<caf::expected<instance_supervisor_actor>(node_role, node_agent_actor observer)> start_instance;
  /// The pool instance of this role was stopped (the node is back in the pool).
  std::function<void(node_role)> instance_stopped;
};

/// Spawns the node agent of this process. It registers with the controller whenever the
/// bootstrap thread hands it one (`ctl_up`), monitors it, relays the reports of local instance
/// supervisors (and re-sends the latest ones after every re-registration, so a restarted
/// controller learns the current state), and keeps the pushed membership view in `snapshot`.
/// On a ready-pool node it starts the instance the controller assigns (`assign`) and drains and
/// stops it again when the controller gives the node back to the pool (`unassign`).
node_agent_actor spawn_node_agent(caf::actor_system& sys, node_agent_config cfg);

} // namespace deepinfer::actors
