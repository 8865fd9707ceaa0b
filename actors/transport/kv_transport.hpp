#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/messages.hpp"
#include "actors/transport/kv_transport_choice.hpp"
#include "kv/parcel_store.hpp"
#include "kv/rdma/rdma_devices.hpp"

namespace deepinfer::actors {

/// How the KV of a prefilled sequence moves from its prefill rank to its decode rank (DESIGN §1
/// step 5). The prefill side `send`s the exported sequence (engine::rank_engine::export_sequence
/// bytes) and gets the `kv_handoff` that travels in the decode message; the decode side
/// `receive`s the bytes back. `choose_kv_transport` picks one per pair of ranks.
/// Failures are `deepinfer` errors (actors/errors.hpp): `kv_parcel_gone`, `kv_package_corrupt`,
/// `kv_rdma_failed` (the request is retried without RDMA).
class kv_transport {
public:
  virtual ~kv_transport() = default;
  /// What is carried in `kv_handoff::transport`.
  virtual kv_transport_kind kind() const = 0;
  /// Its name, for logs and metrics labels.
  const char* name() const { return to_string(kind()); }
  /// Packs `sequence` for request `id` into `out`; an error when it cannot (none: sent).
  virtual caf::error send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out) = 0;
  /// The sequence bytes `in` carries, or why they are lost or corrupt.
  virtual caf::expected<std::vector<std::byte>> receive(kv_handoff& in) = 0;
};

/// Both ranks share a process: the buffer is parked here and only its ticket travels; the decode
/// rank takes the very same buffer (no copy, no serialization). Parcels whose handoff never
/// arrives (the decode rank died in between) are dropped after `ttl`. Thread-safe.
class in_process_kv_transport final : public kv_transport {
public:
  explicit in_process_kv_transport(std::chrono::milliseconds ttl = std::chrono::minutes(2));
  kv_transport_kind kind() const override { return kv_transport_kind::in_process; }
  caf::error send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out) override;
  caf::expected<std::vector<std::byte>> receive(kv_handoff& in) override;
  /// Parcels parked now (sent, not yet received nor expired).
  std::size_t parked() const { return parcels_.size(); }

private:
  kv::parcel_store<std::vector<std::byte>> parcels_;
};

/// Across processes: the sequence is cereal-packed (format version, request id, length, XXH64
/// checksum, bytes) into `kv_handoff::packed`, which CAF sends as one byte vector. The decode side
/// checks version, id and checksum before the engine sees a byte.
class caf_message_kv_transport final : public kv_transport {
public:
  kv_transport_kind kind() const override { return kv_transport_kind::caf_message; }
  caf::error send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out) override;
  caf::expected<std::vector<std::byte>> receive(kv_handoff& in) override;
};

using kv::rdma_device_count;

/// Sets how this process moves KV (`mode`) and, when RDMA may be used, starts the process's RDMA
/// listener on `host:port` (0: a free port). Under `automatic` a listener that cannot start only
/// logs; under `rdma` it is an error message that says what to do. Idempotent: the first
/// listener started stays (several nodes in one process share it).
std::optional<std::string> configure_kv_transports(kv_transport_mode mode, const std::string& host, uint16_t port);

/// `HOST:PORT` of this process's RDMA listener, which the node advertises in `node_info::rdma`;
/// empty when it has none.
std::string local_rdma_endpoint();

/// The transport for a prefill rank sending to a decode rank: in_process when both live in this
/// process; rdma when `decide_kv_transport` allows it (built in, a device and a listener
/// here, the decode node advertises RDMA (`peer_rdma`), the mode is not caf_message); else
/// caf_message.
kv_transport& choose_kv_transport(bool same_process, bool peer_rdma = false);

/// The transport that produced a handoff of `kind`; nullptr when this build has none (rdma
/// without libibverbs and librdmacm).
kv_transport* kv_transport_of(kv_transport_kind kind);

} // namespace deepinfer::actors
