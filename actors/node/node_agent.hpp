#pragma once

#include <functional>
#include <memory>

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
};

/// Spawns the node agent of this process. It registers with the controller whenever the
/// bootstrap thread hands it one (`ctl_up`), monitors it, relays the reports of local instance
/// supervisors (and re-sends the latest ones after every re-registration, so a restarted
/// controller learns the current state), and keeps the pushed membership view in `snapshot`.
node_agent_actor spawn_node_agent(caf::actor_system& sys, node_agent_config cfg);

} // namespace deepinfer::actors
