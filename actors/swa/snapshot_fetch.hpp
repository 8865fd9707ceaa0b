#pragma once

#include <cstdint>
#include <span>

#include <caf/fwd.hpp>

#include "kv/prefix_cache.hpp"

namespace deepinfer::actors {

/// The SWA directory named another node's memory (`owner`, its snapshot server) for the window
/// of `tokens` ending at `end`: when this node lacks that snapshot, fetches it (a bounded wait,
/// blocking: call it on a thread of its own, as a prefill rank's block fetcher does) and keeps it
/// in `cache`. True when a snapshot arrived. `rank` labels the log line of a failed fetch.
bool fetch_remote_snapshot(caf::actor_system& sys, kv::prefix_cache& cache, std::span<const int32_t> tokens,
                           int64_t end, const caf::strong_actor_ptr& owner, uint32_t rank, kv::cache_salt salt,
                           std::span<const kv::image_mark> images);

} // namespace deepinfer::actors
