#pragma once

#include <memory>

#include "actors/control/instance_supervisor.hpp"
#include "actors/node/node_runtime.hpp"

namespace deepinfer::kv {
class prefix_cache;
}

namespace deepinfer::actors {

namespace http {
class metrics_registry;
}
class structured_output;

/// What every instance of a node shares: the process's prefix cache, its structured-output
/// compiler (the cache its ranks mask with, and the actor that fills it) and its /metrics
/// registry (any may be null).
struct node_shared_parts {
  std::shared_ptr<kv::prefix_cache> cache;
  std::shared_ptr<structured_output> constraints;
  std::shared_ptr<http::metrics_registry> metrics;
  so_compiler_actor compiler;
  std::shared_ptr<detached_actors> detached;
};

/// The supervisor config of one instance of `node` (its manifest instances and, on a ready-pool
/// node, the one the controller assigns): name, ranks, EP group, drain grace, and with a model
/// the engine every rank loads (prefill, decode: KV pool, cache, constraints, decoder mode,
/// speculation, ISA, cost model; vision: the encoder only).
instance_supervisor_config make_instance_config(const node_runtime_config& node, const instance_spec& spec,
                                                const node_shared_parts& shared);

} // namespace deepinfer::actors
