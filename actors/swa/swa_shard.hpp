#pragma once

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"

namespace deepinfer::actors {

/// Spawns this entrypoint's shard of the SWA directory (DESIGN §4.2): a kv::swa_directory_shard
/// under an actor. Entries live `ttl_ms` (the snapshots' own lifetime); an owner that goes down
/// takes its entries along, so lookups never name a dead node for long.
swa_shard_actor spawn_swa_shard(caf::actor_system& sys, int64_t ttl_ms);

/// The shard responsible for `key` among the alive nodes of `view` that host one (consistent
/// hashing over their names, so adding an entrypoint moves about 1/N of the keys); null if none.
caf::strong_actor_ptr swa_shard_for(const membership_view& view, const kv::block_key& key);

} // namespace deepinfer::actors
