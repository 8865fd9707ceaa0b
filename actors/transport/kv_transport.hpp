#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "actors/transport/kv_transport_choice.hpp"
#include "actors/messages.hpp"

namespace deepinfer::actors {

/// How the KV of a prefilled sequence moves from its prefill rank to its decode rank (DESIGN §1
/// step 5). The prefill side `send`s the exported sequence (engine::rank_engine::export_sequence
/// bytes) and gets the `kv_handoff` that travels in the decode message; the decode side
/// `receive`s the bytes back. `choose_kv_transport` picks one per pair of ranks.
class kv_transport {
public:
  virtual ~kv_transport() = default;
  /// The name carried in `kv_handoff::transport` and in metrics.
  virtual const char* name() const = 0;
  /// Packs `sequence` for request `id` into `out`; false and `error` when it cannot.
  virtual bool send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out, std::string* error) = 0;
  /// The sequence bytes `in` carries; nullopt and `error` when they are lost or corrupt.
  virtual std::optional<std::vector<std::byte>> receive(kv_handoff& in, std::string* error) = 0;
};

/// Both ranks share a process: the buffer is parked here and only its ticket travels; the decode
/// rank takes the very same buffer (no copy, no serialization). Parcels whose handoff never
/// arrives (the decode rank died in between) are dropped after `ttl`. Thread-safe.
class in_process_kv_transport final : public kv_transport {
public:
  explicit in_process_kv_transport(std::chrono::milliseconds ttl = std::chrono::minutes(2));
  const char* name() const override { return "in_process"; }
  bool send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out, std::string* error) override;
  std::optional<std::vector<std::byte>> receive(kv_handoff& in, std::string* error) override;
  /// Parcels parked now (sent, not yet received nor expired).
  std::size_t parked() const;

private:
  struct parcel {
    std::vector<std::byte> bytes;
    std::chrono::steady_clock::time_point parked;
  };
  void expire_locked(std::chrono::steady_clock::time_point now);

  std::chrono::milliseconds ttl_;
  mutable std::mutex mtx_;
  uint64_t next_ticket_ = 1;
  std::map<uint64_t, parcel> parcels_;
};

/// Across processes: the sequence is cereal-packed (format version, request id, length, XXH64
/// checksum, bytes) into `kv_handoff::packed`, which CAF sends as one byte vector. The decode side
/// checks version, id and checksum before the engine sees a byte.
class caf_message_kv_transport final : public kv_transport {
public:
  const char* name() const override { return "caf_message"; }
  bool send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out, std::string* error) override;
  std::optional<std::vector<std::byte>> receive(kv_handoff& in, std::string* error) override;
};

/// RDMA devices this process sees (0 without libibverbs at build time or without a device).
int rdma_device_count();

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

/// The transport that produced `h` (by its name); nullptr for an unknown name.
kv_transport* kv_transport_named(const std::string& name);

} // namespace deepinfer::actors
