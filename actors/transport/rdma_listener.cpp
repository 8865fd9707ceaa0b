#include "actors/transport/rdma_listener.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

/// Completion queue shared by every connection.
constexpr int cq_depth = 4096;

std::string errno_text(const char* what) {
  return std::string{what} + ": " + std::strerror(errno);
}

bool make_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

} // namespace

std::unique_ptr<rdma_listener> rdma_listener::open(const config& cfg, callbacks cb, std::string* error) {
  std::unique_ptr<rdma_listener> l{new rdma_listener};
  l->cb_ = std::move(cb);
  auto fail = [&](std::string what) {
    *error = std::move(what);
    return nullptr;
  };
  l->channel_ = rdma_create_event_channel();
  if (!l->channel_)
    return fail(errno_text("cannot open the RDMA connection manager (/dev/infiniband/rdma_cm; is rdma_ucm loaded?)"));
  if (rdma_create_id(l->channel_, &l->listen_id_, nullptr, RDMA_PS_TCP) != 0)
    return fail(errno_text("rdma_create_id"));
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* res = nullptr;
  auto port = std::to_string(cfg.port);
  if (rdma_getaddrinfo(cfg.host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
    return fail(errno_text(("cannot resolve RDMA listen address " + cfg.host).c_str()));
  int rc = rdma_bind_addr(l->listen_id_, res->ai_src_addr);
  rdma_freeaddrinfo(res);
  if (rc != 0)
    return fail(errno_text(("cannot bind the RDMA listener to " + cfg.host + ":" + port).c_str()));
  l->verbs_ = l->listen_id_->verbs;
  if (!l->verbs_)
    return fail(cfg.host + " is not the address of an RDMA device: give the node the IP of its "
                           "RDMA NIC (RoCE or IPoIB)");
  if (rdma_listen(l->listen_id_, 64) != 0)
    return fail(errno_text("rdma_listen"));
  l->port_ = ntohs(rdma_get_src_port(l->listen_id_));
  if (ibv_query_device(l->verbs_, &l->device_) != 0)
    return fail(errno_text("ibv_query_device"));
  l->pd_ = ibv_alloc_pd(l->verbs_);
  l->comp_ = l->pd_ ? ibv_create_comp_channel(l->verbs_) : nullptr;
  l->cq_ = l->comp_ ? ibv_create_cq(l->verbs_, std::min(cq_depth, l->device_.max_cqe), nullptr, l->comp_, 0) : nullptr;
  if (!l->cq_ || ibv_req_notify_cq(l->cq_, 0) != 0)
    return fail(errno_text("cannot set up the RDMA listener's protection domain and completion queue"));
  l->stop_fd_ = eventfd(0, EFD_NONBLOCK);
  if (l->stop_fd_ < 0 || !make_nonblocking(l->channel_->fd) || !make_nonblocking(l->comp_->fd))
    return fail(errno_text("cannot set up the RDMA listener's file descriptors"));
  l->running_ = true;
  l->thread_ = std::thread([p = l.get()] { p->run(); });
  return l;
}

rdma_listener::~rdma_listener() {
  stop();
  if (cq_)
    ibv_destroy_cq(cq_);
  if (comp_)
    ibv_destroy_comp_channel(comp_);
  if (pd_)
    ibv_dealloc_pd(pd_);
  if (listen_id_)
    rdma_destroy_id(listen_id_);
  if (channel_)
    rdma_destroy_event_channel(channel_);
  if (stop_fd_ >= 0)
    ::close(stop_fd_);
}

void rdma_listener::stop() {
  if (running_.exchange(false)) {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
  }
  if (thread_.joinable())
    thread_.join();
  while (!connections_.empty())
    drop(*connections_.begin()->second);
}

ibv_mr* rdma_listener::register_for_read(void* data, std::size_t size, std::string* error) {
  auto* mr = ibv_reg_mr(pd_, data, size, IBV_ACCESS_REMOTE_READ);
  if (!mr)
    *error = errno_text(("cannot register " + std::to_string(size) + " bytes for RDMA "
                         "(pinned-memory limit? see `ulimit -l`)").c_str());
  return mr;
}

void rdma_listener::run() {
  pollfd fds[3] = {{channel_->fd, POLLIN, 0}, {comp_->fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  while (running_) {
    int n = ::poll(fds, 3, 1000);
    if (n < 0 && errno != EINTR) {
      log().error("RDMA KV listener stops: {}", std::strerror(errno));
      return;
    }
    if (n > 0 && (fds[2].revents & POLLIN))
      return;
    if (n > 0 && (fds[0].revents & POLLIN)) {
      rdma_cm_event* ev = nullptr;
      while (rdma_get_cm_event(channel_, &ev) == 0)
        on_cm_event(ev);
    }
    if (n > 0 && (fds[1].revents & POLLIN))
      on_completions();
    if (cb_.on_tick)
      cb_.on_tick();
  }
}

void rdma_listener::on_cm_event(rdma_cm_event* ev) {
  auto* id = ev->id;
  auto type = ev->event;
  auto asked = ev->param.conn;
  // Acknowledged first: rdma_destroy_id waits for every event of its id to be acknowledged.
  rdma_ack_cm_event(ev);
  switch (type) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
      accept(id, asked);
      break;
    case RDMA_CM_EVENT_ESTABLISHED:
      break;
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
      if (id != listen_id_)
        drop(id);
      break;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      log().error("RDMA KV listener: device removed; KV handoffs will fail over to CAF messages");
      if (id != listen_id_)
        drop(id);
      break;
    default:
      log().debug("RDMA KV listener: {}", rdma_event_str(type));
  }
}

void rdma_listener::accept(rdma_cm_id* id, const rdma_conn_param& asked) {
  auto refuse = [&](const std::string& why) {
    log().warn("RDMA KV listener refuses a connection: {}", why);
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
  };
  if (id->verbs != verbs_)
    return refuse("it arrived on another RDMA device");
  // Each connection can hold recv_depth receive completions plus one send in the shared CQ.
  auto max_connections = static_cast<std::size_t>(std::min(cq_depth, device_.max_cqe)) / (recv_depth + 1);
  if (connections_.size() >= max_connections)
    return refuse("too many decode nodes connected (" + std::to_string(max_connections) + ")");
  auto c = std::make_unique<connection>();
  c->serial = next_serial_++;
  c->id = id;
  ibv_qp_init_attr qa{};
  qa.send_cq = cq_;
  qa.recv_cq = cq_;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = 1;
  qa.cap.max_recv_wr = recv_depth;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, pd_, &qa) != 0)
    return refuse(errno_text("rdma_create_qp"));
  c->mr = ibv_reg_mr(pd_, c->slots, sizeof c->slots, IBV_ACCESS_LOCAL_WRITE);
  bool posted = c->mr != nullptr;
  for (std::size_t i = 0; posted && i < recv_depth; ++i)
    posted = post_recv(*c, i);
  if (!posted) {
    if (c->mr)
      ibv_dereg_mr(c->mr);
    rdma_destroy_qp(id);
    return refuse(errno_text("cannot post receives"));
  }
  rdma_conn_param p{};
  // The event reports the request from this side's point of view: `responder_resources` is the
  // reads the decode side wants in flight against us (rdma_accept(3)); capped by the device.
  p.responder_resources = static_cast<uint8_t>(std::min<int>(asked.responder_resources, device_.max_qp_rd_atom));
  p.initiator_depth = static_cast<uint8_t>(std::min<int>(asked.initiator_depth, device_.max_qp_init_rd_atom));
  p.rnr_retry_count = 7;
  if (rdma_accept(id, &p) != 0) {
    ibv_dereg_mr(c->mr);
    rdma_destroy_qp(id);
    return refuse(errno_text("rdma_accept"));
  }
  id->context = reinterpret_cast<void*>(static_cast<uintptr_t>(c->serial));
  connections_.emplace(c->serial, std::move(c));
}

void rdma_listener::drop(rdma_cm_id* id) {
  auto i = connections_.find(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(id->context)));
  if (i != connections_.end())
    drop(*i->second);
}

void rdma_listener::drop(connection& c) {
  auto serial = c.serial;
  rdma_disconnect(c.id);
  rdma_destroy_qp(c.id);
  if (c.mr)
    ibv_dereg_mr(c.mr);
  rdma_destroy_id(c.id);
  connections_.erase(serial);
}

bool rdma_listener::post_recv(connection& c, std::size_t slot) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(&c.slots[slot]);
  sge.length = sizeof c.slots[slot];
  sge.lkey = c.mr->lkey;
  ibv_recv_wr wr{};
  wr.wr_id = (c.serial << 8) | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(c.id->qp, &wr, &bad) == 0;
}

void rdma_listener::on_completions() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(comp_, &cq, &ctx) == 0)
    ibv_ack_cq_events(cq, 1);
  // Re-armed before draining, so a completion arriving meanwhile raises a new event.
  ibv_req_notify_cq(cq_, 0);
  ibv_wc wc[16];
  int n = 0;
  while ((n = ibv_poll_cq(cq_, 16, wc)) > 0) {
    for (int k = 0; k < n; ++k) {
      // Completions of a dropped connection (flushed receives) find no connection: ignored.
      auto i = connections_.find(wc[k].wr_id >> 8);
      if (i == connections_.end() || wc[k].status != IBV_WC_SUCCESS || wc[k].opcode != IBV_WC_RECV)
        continue;
      auto& c = *i->second;
      auto slot = static_cast<std::size_t>(wc[k].wr_id & 0xff);
      if (wc[k].byte_len == sizeof(uint64_t) && cb_.on_release)
        cb_.on_release(c.slots[slot]);
      if (!post_recv(c, slot))
        log().warn("RDMA KV listener: cannot repost a receive: {}", std::strerror(errno));
    }
  }
}

} // namespace deepinfer::actors
