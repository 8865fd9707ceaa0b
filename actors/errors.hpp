#pragma once

// The project's error codes across actor boundaries (STYLE §6).

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/make_message.hpp>

namespace deepinfer::actors {

/// Error codes, grouped by subsystem: 1–49 kv (storage and KV transport), 50–99 engine,
/// 100–149 balancers, 150–199 cluster, 200–249 entrypoint.
enum class errc : uint8_t {
  // -- kv -------------------------------------------------------------------------------------
  kv_block_missing = 1,
  kv_store_io = 2,
  /// A handoff names a transport this node does not have.
  kv_transport_unknown = 10,
  /// An in-process KV parcel expired (or the handoff came from another process).
  kv_parcel_gone = 11,
  /// A packed KV sequence fails its version, id or checksum check.
  kv_package_corrupt = 12,
  /// Connecting to, reading from or checking the data of an RDMA peer failed: retried without RDMA.
  kv_rdma_failed = 13,
  // -- engine ---------------------------------------------------------------------------------
  engine_out_of_kv = 50,
  engine_bad_model = 51,
  /// The rank has no engine (its model did not load).
  engine_missing = 52,
  /// The engine refused the request itself (a duplicate id, an invalid prompt).
  engine_invalid_request = 53,
  /// The engine could not import a handed-off sequence (KV of another shape, pool full).
  engine_import_failed = 54,
  /// A prefill or decode step failed.
  engine_step_failed = 55,
  /// The prefilled sequence could not be exported for its decode rank.
  engine_export_failed = 56,
  // -- balancers ------------------------------------------------------------------------------
  no_capacity = 100,
  /// A prefill job names no decode rank.
  no_decode_rank = 101,
  /// The KV a request may reach is more than any live decode rank's pool holds: waiting cannot
  /// help (a smaller request, or larger pools, can).
  no_rank_large_enough = 102,
  // -- cluster --------------------------------------------------------------------------------
  node_unreachable = 150,
  controller_unreachable = 151,
  rank_failed = 152,
  instance_down = 153,
  shutting_down = 154,
  /// A rank stopped because another rank of its EP group failed (not a failure of its own).
  ep_group_failed = 155,
  /// A ready-pool node cannot take (or give back) the instance the controller asked for.
  pool_refused = 156,
  // -- entrypoint -----------------------------------------------------------------------------
  /// The requester cancelled (client gone, stop string matched) or went away.
  request_cancelled = 200,
  /// The structured-output compiler cannot enforce the request's constraint (a 400).
  so_refused = 201,
};

/// Whether a balancer may retry this error on another worker (or, for kv_rdma_failed, the same
/// placement without RDMA).
constexpr bool is_retryable(errc x) {
  switch (x) {
    case errc::kv_parcel_gone:
    case errc::kv_package_corrupt:
    case errc::kv_rdma_failed:
    case errc::kv_transport_unknown:
    case errc::engine_out_of_kv:
    case errc::engine_missing:
    case errc::engine_import_failed:
    case errc::engine_step_failed:
    case errc::engine_export_failed:
    case errc::no_capacity:
    case errc::node_unreachable:
    case errc::rank_failed:
    case errc::ep_group_failed:
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

/// Whether `e` is the `deepinfer` error `x`.
inline bool is(const caf::error& e, errc x) {
  return e.category() == caf::atom("deepinfer") && e.code() == static_cast<uint8_t>(x);
}

/// Whether `e` is a `deepinfer` error that `is_retryable`; a CAF system error (a request timed
/// out, an actor went down) is retryable too, any other category is not.
bool is_retryable(const caf::error& e);

/// The context text `make_error` put in `e` (empty when it has none).
std::string error_text(const caf::error& e);

} // namespace deepinfer::actors
