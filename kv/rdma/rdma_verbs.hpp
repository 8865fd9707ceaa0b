#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

namespace deepinfer::kv {

/// `what: strerror(errno)`.
std::string errno_text(std::string_view what);

/// Sets O_NONBLOCK on `fd`; false when fcntl fails.
bool make_nonblocking(int fd);

/// The verbs objects both ends of the RDMA KV transport set up the same way and tear down in
/// reverse: an rdma_cm event channel (non-blocking) with one id, and on the id's device a
/// protection domain, a completion channel (non-blocking) and one completion queue. The
/// listener's id listens; the peer's connects. Not copyable; the destructor frees what was made.
/// Only compiled with libibverbs and librdmacm.
struct rdma_verbs {
  rdma_event_channel* channel = nullptr;
  rdma_cm_id* id = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* comp = nullptr;
  ibv_cq* cq = nullptr;

  rdma_verbs() = default;
  rdma_verbs(const rdma_verbs&) = delete;
  rdma_verbs& operator=(const rdma_verbs&) = delete;
  ~rdma_verbs();

  /// Opens the event channel and the id; false and `error` (no rdma_cm) otherwise.
  bool open_cm(std::string* error);

  /// Allocates the protection domain, completion channel and a queue of `cq_depth` entries on
  /// `verbs` (the id's device once bound or resolved); false and `error` otherwise.
  bool open_queues(ibv_context* verbs, int cq_depth, std::string* error);
};

/// The attributes of a reliable-connected queue pair on `cq` (send and receive), one SGE each way.
ibv_qp_init_attr rc_qp_attributes(ibv_cq* cq, uint32_t max_send, uint32_t max_recv);

} // namespace deepinfer::kv
