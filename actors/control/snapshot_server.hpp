#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"

namespace deepinfer::kv {
class prefix_cache;
}

namespace deepinfer::actors {

class cluster_snapshot;

/// Reads one snapshot of this node's memory (the prefix cache's SWA store).
using snapshot_reader = std::function<std::optional<std::vector<std::byte>>(const kv::block_key&)>;

/// Spawns the actor that hands this node's SWA snapshots to prefill ranks elsewhere (DESIGN §4.2:
/// "a miss on the local node fetches across nodes").
snapshot_server_actor spawn_snapshot_server(caf::actor_system& sys, snapshot_reader read);

/// The snapshot server of `cache` (which it does not keep alive), and every snapshot the cache
/// keeps from now on recorded in the SWA directory shard responsible for its key (found in the
/// node's view `cluster`). The server's handle, for node_info::snapshots.
caf::strong_actor_ptr serve_snapshots(caf::actor_system& sys, const std::shared_ptr<kv::prefix_cache>& cache,
                                      std::shared_ptr<cluster_snapshot> cluster);

} // namespace deepinfer::actors
