#pragma once

#include <string>

#include "actors/node/serving_config.hpp"
#include "kv/prefix_cache.hpp"
#include "recipe/base/expected.hpp"

namespace deepinfer::actors {

/// The prefix cache a serving node opens (DESIGN §4): its root, the model's fingerprint (from
/// MODEL_DIR/config.json: blocks of another model are never read), the SWA snapshot TTL and
/// memory cap, the writer queue, the TTLs by traffic class and the GC watermarks of the disk
/// budget (`[kv] disk_budget_gib`, or the filesystem's size when 0). Why not, when the model's
/// config cannot be read.
expected<kv::prefix_cache::config, std::string> prefix_cache_config_of(const serving_config& sc);

} // namespace deepinfer::actors
