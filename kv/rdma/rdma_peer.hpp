#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "kv/rdma/rdma_verbs.hpp"
#include "recipe/base/host_port.hpp"

namespace deepinfer::kv {

/// The active side of the RDMA KV transport on a decode node: one RC connection, made by rdma_cm,
/// to one prefill node's `rdma_listener`. Not thread-safe (the transport serializes per peer).
/// After any failure the connection is unusable; drop it and connect again. Only compiled with
/// libibverbs and librdmacm.
class rdma_peer {
public:
  struct config {
    std::chrono::milliseconds connect_timeout{2000};
    /// For one whole read (all its chunks) and for the release message.
    std::chrono::milliseconds read_timeout{10000};
  };

  /// A connected peer, or nullptr and `error` (no route, refused, no answer within the timeout).
  static std::unique_ptr<rdma_peer> connect(const host_port& to, const config& cfg, std::string* error);
  ~rdma_peer();
  rdma_peer(const rdma_peer&) = delete;
  rdma_peer& operator=(const rdma_peer&) = delete;

  /// RDMA-reads `out.size()` bytes at `address` (`rkey`) of the peer into `out`; false and `error`
  /// on a failed or late completion (the connection is then torn down before `out` may go).
  bool read(uint64_t address, uint32_t rkey, std::span<std::byte> out, std::string* error);

  /// Tells the peer's listener that parcel `ticket` was read (a SEND of the ticket).
  bool release(uint64_t ticket, std::string* error);

  /// False once the peer disconnected (its node restarted, say) or an operation failed: a cached
  /// connection is checked before each use, so a dead one costs a reconnect, not a request.
  bool healthy();

private:
  rdma_peer() = default;
  bool wait_cm(rdma_cm_event_type want, std::chrono::steady_clock::time_point deadline, std::string* error);
  bool wait_completions(int n, std::chrono::steady_clock::time_point deadline, std::string* error);
  void tear_down_qp();

  config cfg_;
  /// The connecting id, its protection domain and completion queue.
  rdma_verbs verbs_;
  ibv_mr* ticket_mr_ = nullptr;
  uint64_t ticket_ = 0;
  bool connected_ = false;
  /// Largest single READ the port allows (reads are split into chunks of at most this).
  uint64_t max_chunk_ = 0;
};

} // namespace deepinfer::kv
