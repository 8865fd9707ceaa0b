#pragma once

#include <cstdint>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"

namespace deepinfer::actors {

/// Identity of one rank within one generation of its instance.
struct rank_config {
  uint32_t rank = 0;
  uint32_t ep_size = 1;
  uint32_t generation = 0;
};

/// Spawns a rank actor. Until the engine is wired in, a rank is an idle worker that answers
/// pings, echoes payloads, and fails on request (fault injection) exactly as a crashed rank would:
/// it terminates with `errc::rank_failed`, which its supervisor observes through its monitor.
rank_actor spawn_rank(caf::actor_system& sys, const rank_config& cfg);

} // namespace deepinfer::actors
