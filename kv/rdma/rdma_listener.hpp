#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "kv/rdma/rdma_verbs.hpp"

namespace deepinfer::kv {

/// The passive side of the RDMA KV transport on a prefill node: an rdma_cm listener bound to one
/// address of an RDMA device. Decode nodes connect (one RC queue pair each), READ the parcels
/// registered here with `register_for_read`, then SEND the parcel's 8-byte ticket, which this
/// listener's thread hands to `on_release`. The thread also calls `on_tick` about once a second
/// (parcel expiry). Only compiled with libibverbs and librdmacm.
class rdma_listener {
public:
  struct config {
    /// An address of the RDMA device (RoCE / IPoIB), as `HOST`; a wildcard is refused.
    std::string host;
    /// 0 picks a free port (see `port()`).
    uint16_t port = 0;
  };
  struct callbacks {
    std::function<void(uint64_t ticket)> on_release;
    std::function<void()> on_tick;
  };

  /// A running listener, or nullptr and `error` (no rdma_cm, no RDMA device at `host`, port in use).
  static std::unique_ptr<rdma_listener> open(const config& cfg, callbacks cb, std::string* error);
  ~rdma_listener();
  rdma_listener(const rdma_listener&) = delete;
  rdma_listener& operator=(const rdma_listener&) = delete;

  /// Stops the thread (no callback runs afterwards) and disconnects every peer. Idempotent.
  void stop();

  uint16_t port() const { return port_; }

  /// Registers `size` bytes at `data` for remote reads on this listener's device; nullptr and
  /// `error` when the device refuses (pinned-memory limit: see `ulimit -l`). Free with
  /// ibv_dereg_mr before stopping.
  ibv_mr* register_for_read(void* data, std::size_t size, std::string* error);

private:
  /// Receives posted per connection (release tickets in flight from one decode node).
  static constexpr std::size_t recv_depth = 16;
  struct connection {
    uint64_t serial = 0;
    rdma_cm_id* id = nullptr;
    ibv_mr* mr = nullptr;
    uint64_t slots[recv_depth] = {};
  };

  rdma_listener() = default;
  void run();
  void on_cm_event(rdma_cm_event* ev);
  void accept(rdma_cm_id* id, const rdma_conn_param& asked);
  void drop(rdma_cm_id* id);
  void drop(connection& c);
  bool post_recv(connection& c, std::size_t slot);
  void on_completions();

  callbacks cb_;
  /// The listening id, its protection domain and the completion queue every connection shares.
  rdma_verbs verbs_;
  ibv_context* device_ctx_ = nullptr;
  ibv_device_attr device_{};
  int stop_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> running_{false};
  /// Touched by the listener thread only (and by `stop` once it has joined).
  std::map<uint64_t, std::unique_ptr<connection>> connections_;
  uint64_t next_serial_ = 1;
};

} // namespace deepinfer::kv
