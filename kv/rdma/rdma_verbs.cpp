#include "kv/rdma/rdma_verbs.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>

namespace deepinfer::kv {

std::string errno_text(std::string_view what) {
  return std::string{what} + ": " + std::strerror(errno);
}

bool make_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

rdma_verbs::~rdma_verbs() {
  if (cq)
    ibv_destroy_cq(cq);
  if (comp)
    ibv_destroy_comp_channel(comp);
  if (pd)
    ibv_dealloc_pd(pd);
  if (id)
    rdma_destroy_id(id);
  if (channel)
    rdma_destroy_event_channel(channel);
}

bool rdma_verbs::open_cm(std::string* error) {
  channel = rdma_create_event_channel();
  if (!channel) {
    *error = errno_text("cannot open the RDMA connection manager (/dev/infiniband/rdma_cm; is rdma_ucm loaded?)");
    return false;
  }
  if (!make_nonblocking(channel->fd)) {
    *error = errno_text("cannot make the RDMA event channel non-blocking");
    return false;
  }
  if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) {
    *error = errno_text("rdma_create_id");
    return false;
  }
  return true;
}

bool rdma_verbs::open_queues(ibv_context* verbs, int cq_depth, std::string* error) {
  pd = ibv_alloc_pd(verbs);
  comp = pd ? ibv_create_comp_channel(verbs) : nullptr;
  cq = comp ? ibv_create_cq(verbs, cq_depth, nullptr, comp, 0) : nullptr;
  if (!cq) {
    *error = errno_text("cannot set up the RDMA protection domain and completion queue");
    return false;
  }
  if (!make_nonblocking(comp->fd)) {
    *error = errno_text("cannot make the RDMA completion channel non-blocking");
    return false;
  }
  return true;
}

ibv_qp_init_attr rc_qp_attributes(ibv_cq* cq, uint32_t max_send, uint32_t max_recv) {
  ibv_qp_init_attr qa{};
  qa.send_cq = cq;
  qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = max_send;
  qa.cap.max_recv_wr = max_recv;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  return qa;
}

} // namespace deepinfer::kv
