#include "kv/rdma/rdma_peer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <poll.h>

namespace deepinfer::kv {

namespace {

/// READs in flight at once on one connection (each a chunk of up to `chunk_cap` bytes).
constexpr int read_window = 16;
constexpr uint64_t chunk_cap = 64ull << 20;

int ms_until(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

} // namespace

std::unique_ptr<rdma_peer> rdma_peer::connect(const host_port& to, const config& cfg, std::string* error) {
  std::unique_ptr<rdma_peer> p{new rdma_peer};
  p->cfg_ = cfg;
  auto fail = [&](std::string what) {
    *error = std::move(what);
    return nullptr;
  };
  auto deadline = std::chrono::steady_clock::now() + cfg.connect_timeout;
  int step_ms = std::max(1, static_cast<int>(cfg.connect_timeout.count()));
  auto& v = p->verbs_;
  if (!v.open_cm(error))
    return nullptr;
  rdma_addrinfo hints{};
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* res = nullptr;
  auto port = std::to_string(to.port);
  if (rdma_getaddrinfo(to.host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
    return fail(errno_text("cannot resolve " + to.host));
  int rc = rdma_resolve_addr(v.id, nullptr, res->ai_dst_addr, step_ms);
  rdma_freeaddrinfo(res);
  if (rc != 0)
    return fail(errno_text("rdma_resolve_addr"));
  if (!p->wait_cm(RDMA_CM_EVENT_ADDR_RESOLVED, deadline, error))
    return nullptr;
  if (rdma_resolve_route(v.id, std::max(1, ms_until(deadline))) != 0)
    return fail(errno_text("rdma_resolve_route"));
  if (!p->wait_cm(RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, error))
    return nullptr;

  auto* verbs = v.id->verbs;
  ibv_device_attr dev{};
  ibv_port_attr port_attr{};
  if (ibv_query_device(verbs, &dev) != 0 || ibv_query_port(verbs, v.id->port_num, &port_attr) != 0)
    return fail(errno_text("cannot query the RDMA device"));
  p->max_chunk_ = std::min<uint64_t>(chunk_cap, port_attr.max_msg_sz);
  if (!v.open_queues(verbs, read_window + 2, error))
    return nullptr;
  auto qa = rc_qp_attributes(v.cq, read_window + 1, 1);
  qa.sq_sig_all = 1;
  if (rdma_create_qp(v.id, v.pd, &qa) != 0)
    return fail(errno_text("rdma_create_qp"));
  p->ticket_mr_ = ibv_reg_mr(v.pd, &p->ticket_, sizeof p->ticket_, IBV_ACCESS_LOCAL_WRITE);
  if (!p->ticket_mr_)
    return fail(errno_text("ibv_reg_mr"));
  rdma_conn_param cp{};
  cp.initiator_depth = static_cast<uint8_t>(std::clamp(dev.max_qp_init_rd_atom, 1, read_window));
  cp.responder_resources = static_cast<uint8_t>(std::clamp(dev.max_qp_rd_atom, 0, 1));
  cp.retry_count = 7;
  // Bounded: the listener keeps receives posted, and a peer that stops posting must not hang us.
  cp.rnr_retry_count = 6;
  if (rdma_connect(v.id, &cp) != 0)
    return fail(errno_text("rdma_connect"));
  if (!p->wait_cm(RDMA_CM_EVENT_ESTABLISHED, deadline, error))
    return nullptr;
  p->connected_ = true;
  return p;
}

rdma_peer::~rdma_peer() {
  tear_down_qp();
  if (ticket_mr_)
    ibv_dereg_mr(ticket_mr_);
  // verbs_ frees the queues, the id and the channel.
}

void rdma_peer::tear_down_qp() {
  if (connected_)
    rdma_disconnect(verbs_.id);
  connected_ = false;
  if (verbs_.id && verbs_.id->qp)
    rdma_destroy_qp(verbs_.id);  // no DMA into our buffers after this
}

bool rdma_peer::wait_cm(rdma_cm_event_type want, std::chrono::steady_clock::time_point deadline,
                        std::string* error) {
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(verbs_.channel, &ev) == 0) {
      auto got = ev->event;
      auto status = ev->status;
      rdma_ack_cm_event(ev);
      if (got == want)
        return true;
      *error = std::string{"expected "} + rdma_event_str(want) + ", got " + rdma_event_str(got)
               + " (status " + std::to_string(status) + ")";
      return false;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *error = errno_text("rdma_get_cm_event");
      return false;
    }
    pollfd fd{verbs_.channel->fd, POLLIN, 0};
    int n = ::poll(&fd, 1, ms_until(deadline));
    if (n == 0) {
      *error = std::string{"no "} + rdma_event_str(want) + " within the connect timeout";
      return false;
    }
    if (n < 0 && errno != EINTR) {
      *error = errno_text("poll");
      return false;
    }
  }
}

bool rdma_peer::wait_completions(int n, std::chrono::steady_clock::time_point deadline, std::string* error) {
  int got = 0;
  bool armed = false;
  while (got < n) {
    ibv_wc wc[read_window + 2];
    int k = ibv_poll_cq(verbs_.cq, read_window + 2, wc);
    if (k < 0) {
      *error = "ibv_poll_cq failed";
      return false;
    }
    for (int i = 0; i < k; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) {
        *error = std::string{"work completion "} + ibv_wc_status_str(wc[i].status);
        return false;
      }
    got += k;
    if (k > 0)
      continue;
    if (!armed) {
      // Armed, then polled once more: a completion between the poll and the arm is not missed.
      ibv_req_notify_cq(verbs_.cq, 0);
      armed = true;
      continue;
    }
    pollfd fd{verbs_.comp->fd, POLLIN, 0};
    int r = ::poll(&fd, 1, ms_until(deadline));
    if (r == 0) {
      *error = "no completion within " + std::to_string(cfg_.read_timeout.count()) + " ms";
      return false;
    }
    if (r < 0 && errno != EINTR) {
      *error = errno_text("poll");
      return false;
    }
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(verbs_.comp, &cq, &ctx) == 0) {
      ibv_ack_cq_events(cq, 1);
      armed = false;
    }
  }
  return true;
}

bool rdma_peer::read(uint64_t address, uint32_t rkey, std::span<std::byte> out, std::string* error) {
  if (!connected_) {
    *error = "not connected";
    return false;
  }
  if (out.empty())
    return true;
  auto* mr = ibv_reg_mr(verbs_.pd, out.data(), out.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!mr) {
    *error = errno_text("cannot register " + std::to_string(out.size()) + " bytes (pinned-memory limit? see `ulimit -l`)");
    return false;
  }
  auto deadline = std::chrono::steady_clock::now() + cfg_.read_timeout;
  uint64_t offset = 0;
  bool ok = true;
  while (ok && offset < out.size()) {
    int posted = 0;
    for (; posted < read_window && offset < out.size(); ++posted) {
      auto len = std::min<uint64_t>(max_chunk_, out.size() - offset);
      ibv_sge sge{};
      sge.addr = reinterpret_cast<uintptr_t>(out.data() + offset);
      sge.length = static_cast<uint32_t>(len);
      sge.lkey = mr->lkey;
      ibv_send_wr wr{};
      wr.wr_id = offset;
      wr.opcode = IBV_WR_RDMA_READ;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = address + offset;
      wr.wr.rdma.rkey = rkey;
      ibv_send_wr* bad = nullptr;
      if (ibv_post_send(verbs_.id->qp, &wr, &bad) != 0) {
        *error = errno_text("ibv_post_send");
        ok = false;
        break;
      }
      offset += len;
    }
    // Every posted read completes (or fails) before the next window or the way out.
    ok = wait_completions(posted, deadline, error) && ok;
  }
  if (!ok)
    tear_down_qp();  // reads may still be in flight: stop them before `out` is unregistered
  ibv_dereg_mr(mr);
  return ok;
}

bool rdma_peer::healthy() {
  rdma_cm_event* ev = nullptr;
  // Any event on an established connection (DISCONNECTED, DEVICE_REMOVAL, ...) ends it.
  while (connected_ && rdma_get_cm_event(verbs_.channel, &ev) == 0) {
    rdma_ack_cm_event(ev);
    tear_down_qp();
  }
  return connected_;
}

bool rdma_peer::release(uint64_t ticket, std::string* error) {
  if (!connected_) {
    *error = "not connected";
    return false;
  }
  ticket_ = ticket;
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(&ticket_);
  sge.length = sizeof ticket_;
  sge.lkey = ticket_mr_->lkey;
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(verbs_.id->qp, &wr, &bad) != 0) {
    *error = errno_text("ibv_post_send");
    tear_down_qp();
    return false;
  }
  if (!wait_completions(1, std::chrono::steady_clock::now() + cfg_.read_timeout, error)) {
    tear_down_qp();
    return false;
  }
  return true;
}

} // namespace deepinfer::kv
