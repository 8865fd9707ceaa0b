#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"

namespace deepinfer::actors {

/// Reads one snapshot of this node's memory (the prefix cache's SWA store).
using snapshot_reader = std::function<std::optional<std::vector<std::byte>>(const kv::block_key&)>;

/// Spawns the actor that hands this node's SWA snapshots to prefill ranks elsewhere (DESIGN §4.2:
/// "a miss on the local node fetches across nodes").
snapshot_server_actor spawn_snapshot_server(caf::actor_system& sys, snapshot_reader read);

} // namespace deepinfer::actors
