#include "kv/rdma/rdma_listener.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "kv/log.hpp"
#include "recipe/base/thread_name.hpp"

namespace deepinfer::kv {

namespace {

/// Completion queue shared by every connection.
constexpr int cq_depth = 4096;

} // namespace

std::unique_ptr<rdma_listener> rdma_listener::open(const config& cfg, callbacks cb, std::string* error) {
  std::unique_ptr<rdma_listener> l{new rdma_listener};
  l->cb_ = std::move(cb);
  auto fail = [&](std::string what) {
    *error = std::move(what);
    return nullptr;
  };
  auto& v = l->verbs_;
  if (!v.open_cm(error))
    return nullptr;
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* res = nullptr;
  auto port = std::to_string(cfg.port);
  if (rdma_getaddrinfo(cfg.host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
    return fail(errno_text("cannot resolve RDMA listen address " + cfg.host));
  int rc = rdma_bind_addr(v.id, res->ai_src_addr);
  rdma_freeaddrinfo(res);
  if (rc != 0)
    return fail(errno_text("cannot bind the RDMA listener to " + cfg.host + ":" + port));
  l->device_ctx_ = v.id->verbs;
  if (!l->device_ctx_)
    return fail(cfg.host + " is not the address of an RDMA device: give the node the IP of its "
                           "RDMA NIC (RoCE or IPoIB)");
  if (rdma_listen(v.id, 64) != 0)
    return fail(errno_text("rdma_listen"));
  l->port_ = ntohs(rdma_get_src_port(v.id));
  if (ibv_query_device(l->device_ctx_, &l->device_) != 0)
    return fail(errno_text("ibv_query_device"));
  if (!v.open_queues(l->device_ctx_, std::min(cq_depth, l->device_.max_cqe), error))
    return nullptr;
  if (ibv_req_notify_cq(v.cq, 0) != 0)
    return fail(errno_text("cannot arm the RDMA listener's completion queue"));
  l->stop_fd_ = eventfd(0, EFD_NONBLOCK);
  if (l->stop_fd_ < 0)
    return fail(errno_text("cannot make the RDMA listener's stop event"));
  l->running_ = true;
  l->thread_ = std::thread([p = l.get()] { p->run(); });
  return l;
}

rdma_listener::~rdma_listener() {
  stop();  // every connection goes before verbs_ frees the queues they use
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
  auto* mr = ibv_reg_mr(verbs_.pd, data, size, IBV_ACCESS_REMOTE_READ);
  if (!mr)
    *error = errno_text("cannot register " + std::to_string(size) + " bytes for RDMA "
                         "(pinned-memory limit? see `ulimit -l`)");
  return mr;
}

void rdma_listener::run() {
  name_this_thread("kv.rdma");
  pollfd fds[3] = {{verbs_.channel->fd, POLLIN, 0}, {verbs_.comp->fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
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
      while (rdma_get_cm_event(verbs_.channel, &ev) == 0)
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
      if (id != verbs_.id)
        drop(id);
      break;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      log().error("RDMA KV listener: device removed; KV handoffs will fail over to CAF messages");
      if (id != verbs_.id)
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
  if (id->verbs != device_ctx_)
    return refuse("it arrived on another RDMA device");
  // Each connection can hold recv_depth receive completions plus one send in the shared CQ.
  auto max_connections = static_cast<std::size_t>(std::min(cq_depth, device_.max_cqe)) / (recv_depth + 1);
  if (connections_.size() >= max_connections)
    return refuse("too many decode nodes connected (" + std::to_string(max_connections) + ")");
  auto c = std::make_unique<connection>();
  c->serial = next_serial_++;
  c->id = id;
  auto qa = rc_qp_attributes(verbs_.cq, 1, recv_depth);
  if (rdma_create_qp(id, verbs_.pd, &qa) != 0)
    return refuse(errno_text("rdma_create_qp"));
  c->mr = ibv_reg_mr(verbs_.pd, c->slots, sizeof c->slots, IBV_ACCESS_LOCAL_WRITE);
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
  while (ibv_get_cq_event(verbs_.comp, &cq, &ctx) == 0)
    ibv_ack_cq_events(cq, 1);
  // Re-armed before draining, so a completion arriving meanwhile raises a new event.
  ibv_req_notify_cq(verbs_.cq, 0);
  ibv_wc wc[16];
  int n = 0;
  while ((n = ibv_poll_cq(verbs_.cq, 16, wc)) > 0) {
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

} // namespace deepinfer::kv
