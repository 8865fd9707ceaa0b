#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"

namespace deepinfer::actors {

class structured_output;

namespace http {
class metrics_registry;
}

/// Spawns a node's structured-output compiler actor around its `structured_output` (the cache
/// its ranks mask with), detached: a compile (up to the compile timeout, seconds for the first one,
/// which loads the vocabulary) holds only this actor's own thread. Compiles, cache hits and
/// refusals are counted in `metrics` (may be null) as `deepinfer_so_compiles_total{result}` and
/// `deepinfer_so_compile_seconds`.
so_compiler_actor spawn_so_compiler(caf::actor_system& sys, std::shared_ptr<structured_output> so,
                                    std::shared_ptr<http::metrics_registry> metrics);

} // namespace deepinfer::actors
