#pragma once

// The project's error codes across actor boundaries (STYLE §6).

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/make_message.hpp>

namespace deepinfer::actors {

/// Error codes, grouped by subsystem: 1–49 kv, 50–99 engine, 100–149 balancers, 150–199 cluster.
enum class errc : uint8_t {
  kv_block_missing = 1,
  kv_store_io = 2,
  engine_out_of_kv = 50,
  engine_bad_model = 51,
  no_capacity = 100,
  node_unreachable = 150,
  controller_unreachable = 151,
  rank_failed = 152,
  instance_down = 153,
  shutting_down = 154,
};

/// Whether a balancer may retry this error on another worker.
constexpr bool is_retryable(errc x) {
  switch (x) {
    case errc::engine_out_of_kv:
    case errc::no_capacity:
    case errc::node_unreachable:
    case errc::rank_failed:
    case errc::instance_down:
      return true;
    default:
      return false;
  }
}

/// The name of a code, for logs and rendered errors.
const char* to_string(errc x);

/// Renders a `deepinfer` error for `caf::actor_system::render` (registered by the node runtime).
std::string render_errc(uint8_t code, caf::atom_value category, const caf::message& context);

/// Makes a `caf::error` of category `deepinfer` carrying a human-readable context.
inline caf::error make_error(errc x, std::string what) {
  return {static_cast<uint8_t>(x), caf::atom("deepinfer"), caf::make_message(std::move(what))};
}

} // namespace deepinfer::actors
