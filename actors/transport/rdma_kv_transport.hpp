#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/transport/kv_transport.hpp"
#include "kv/parcel_store.hpp"

struct ibv_mr;

namespace deepinfer::kv {
class rdma_listener;
class rdma_peer;
} // namespace deepinfer::kv

namespace deepinfer::actors {

/// KV over RDMA, pull model (DESIGN §1 step 5). The prefill side registers the exported sequence
/// for remote reads, parks it (dropped after `ttl` if nobody reads it) and sends only an
/// `rdma_descriptor` (its listener's address, buffer address, rkey, length, XXH3) in
/// `kv_handoff::packed`. The decode side connects to that listener (one cached RC connection per
/// peer, by rdma_cm), RDMA-READs the buffer into its own, verifies length and checksum, and sends
/// the ticket back so the parcel is freed at once.
///
/// Failures are values, never a crash or a hang: connect and read are bounded by timeouts. When
/// `send` cannot register or park the buffer (not started, no device, pinned-memory limit), it
/// logs a warning and sends through `fallback` (caf_message) instead; the handoff then names the
/// fallback and the request is not lost. A decode side that cannot read reports an error that
/// says how to bypass RDMA. Thread-safe. Only compiled with libibverbs and librdmacm.
class rdma_kv_transport final : public kv_transport {
public:
  struct config {
    std::chrono::milliseconds ttl = std::chrono::minutes(2);
    std::chrono::milliseconds connect_timeout = std::chrono::seconds(2);
    std::chrono::milliseconds read_timeout = std::chrono::seconds(10);
  };

  /// Not listening yet: `send` falls back until `start` succeeds.
  explicit rdma_kv_transport(kv_transport& fallback);
  rdma_kv_transport(kv_transport& fallback, config cfg);
  ~rdma_kv_transport() override;
  rdma_kv_transport(const rdma_kv_transport&) = delete;
  rdma_kv_transport& operator=(const rdma_kv_transport&) = delete;

  /// Opens the listener on `host` (this node's address on the RDMA network, its manifest `host`)
  /// and `port` (0: a free one, see `endpoint()`); an error message (no device, address not on
  /// an RDMA NIC, ...) or nullopt. Once started, later calls change nothing.
  std::optional<std::string> start(const std::string& host, uint16_t port);

  /// `HOST:PORT` of the running listener; empty when not started.
  std::string endpoint() const;

  kv_transport_kind kind() const override { return kv_transport_kind::rdma; }
  caf::error send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out) override;
  caf::expected<std::vector<std::byte>> receive(kv_handoff& in) override;

  /// Parcels parked now (sent, neither released nor expired).
  std::size_t parked() const { return parcels_.size(); }

private:
  struct parcel {
    std::vector<std::byte> bytes;
    /// Declared after `bytes`: unregistered before the memory goes.
    std::unique_ptr<ibv_mr, int (*)(ibv_mr*)> mr;
  };
  /// One connection per prefill endpoint; its mutex serializes the reads on it.
  struct peer_slot {
    std::mutex mtx;
    std::unique_ptr<kv::rdma_peer> conn;
  };

  caf::error fall_back(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out, const std::string& why);
  std::shared_ptr<peer_slot> slot_for(const std::string& endpoint);

  config cfg_;
  kv_transport& fallback_;
  mutable std::mutex mtx_;
  std::unique_ptr<kv::rdma_listener> listener_;
  std::string endpoint_;
  kv::parcel_store<parcel> parcels_;
  std::mutex peers_mtx_;
  std::map<std::string, std::shared_ptr<peer_slot>> peers_;
};

} // namespace deepinfer::actors
