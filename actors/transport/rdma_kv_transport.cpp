#include "actors/transport/rdma_kv_transport.hpp"

#include <infiniband/verbs.h>
#include <xxhash.h>

#include "actors/errors.hpp"
#include "actors/log.hpp"
#include "kv/rdma/rdma_descriptor.hpp"
#include "kv/rdma/rdma_listener.hpp"
#include "kv/rdma/rdma_peer.hpp"
#include "recipe/base/host_port.hpp"

namespace deepinfer::actors {

namespace {

/// What every decode-side error ends with: the way around RDMA.
constexpr const char* bypass_hint = "; set kv_transport = caf_message in the manifest (or --kv-transport caf_message) "
                                    "to bypass RDMA";

} // namespace

rdma_kv_transport::rdma_kv_transport(kv_transport& fallback) : rdma_kv_transport(fallback, config{}) {}

rdma_kv_transport::rdma_kv_transport(kv_transport& fallback, config cfg)
    : cfg_(cfg), fallback_(fallback), parcels_(cfg.ttl) {}

rdma_kv_transport::~rdma_kv_transport() {
  // No release or expiry callback runs once the listener's thread has stopped; parcels are then
  // unregistered while the listener's protection domain still exists.
  if (listener_)
    listener_->stop();
  parcels_.clear();
  peers_.clear();
  listener_.reset();
}

std::optional<std::string> rdma_kv_transport::start(const std::string& host, uint16_t port) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (listener_)
    return std::nullopt;
  if (rdma_device_count() == 0)
    return "this node has no RDMA device (none under /sys/class/infiniband)";
  std::string err;
  kv::rdma_listener::callbacks cb;
  cb.on_release = [this](uint64_t ticket) { parcels_.drop(ticket); };
  cb.on_tick = [this] { parcels_.expire(); };
  auto l = kv::rdma_listener::open({host, port}, std::move(cb), &err);
  if (!l)
    return "cannot start the RDMA KV listener on " + host + ": " + err;
  endpoint_ = format_host_port(host, l->port());
  listener_ = std::move(l);
  log().info("RDMA KV listener on {}", endpoint_);
  return std::nullopt;
}

std::string rdma_kv_transport::endpoint() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return endpoint_;
}

caf::error rdma_kv_transport::fall_back(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out,
                                        const std::string& why) {
  log().warn("request={} KV goes as {} instead of RDMA: {}", id, fallback_.name(), why);
  return fallback_.send(id, std::move(sequence), out);
}

caf::error rdma_kv_transport::send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out) {
  kv::rdma_listener* listener = nullptr;
  std::string endpoint;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    listener = listener_.get();
    endpoint = endpoint_;
  }
  if (!listener)
    return fall_back(id, std::move(sequence), out, "the RDMA KV listener is not running");
  if (sequence.empty())
    return fall_back(id, std::move(sequence), out, "empty sequence");
  std::string err;
  // Registration pins the pages: the slow part, done outside the lock.
  std::unique_ptr<ibv_mr, int (*)(ibv_mr*)> mr{listener->register_for_read(sequence.data(), sequence.size(), &err),
                                                &ibv_dereg_mr};
  if (!mr)
    return fall_back(id, std::move(sequence), out, err);
  kv::rdma_descriptor d;
  d.id = id;
  d.endpoint = endpoint;
  d.address = reinterpret_cast<uintptr_t>(sequence.data());
  d.rkey = mr->rkey;
  d.length = sequence.size();
  d.checksum = XXH3_64bits(sequence.data(), sequence.size());
  // The vector's buffer moves with it: the registered address stays valid.
  d.ticket = parcels_.park(parcel{std::move(sequence), std::move(mr)});
  out.id = id;
  out.transport = kind();
  out.ticket = d.ticket;
  out.packed = kv::encode_rdma_descriptor(d);
  return {};
}

std::shared_ptr<rdma_kv_transport::peer_slot> rdma_kv_transport::slot_for(const std::string& endpoint) {
  std::lock_guard<std::mutex> guard{peers_mtx_};
  auto& s = peers_[endpoint];
  if (!s)
    s = std::make_shared<peer_slot>();
  return s;
}

caf::expected<std::vector<std::byte>> rdma_kv_transport::receive(kv_handoff& in) {
  // Every failure is kv_rdma_failed: the entrypoint retries the request without RDMA.
  auto failed = [](std::string what) { return make_error(errc::kv_rdma_failed, std::move(what)); };
  std::string err;
  auto d = kv::decode_rdma_descriptor(in.packed, &err);
  if (!d)
    return failed("cannot read the RDMA KV descriptor: " + err);
  if (d->id != in.id)
    return failed("RDMA KV descriptor does not match its handoff (id " + std::to_string(d->id) + " vs "
                  + std::to_string(in.id) + ")");
  auto from = d->endpoint;
  if (rdma_device_count() == 0)
    return failed("cannot read KV over RDMA from " + from + ": this node has no RDMA device" + bypass_hint);
  std::vector<std::byte> bytes(d->length);
  {
    auto slot = slot_for(from);
    std::lock_guard<std::mutex> guard{slot->mtx};
    if (slot->conn && !slot->conn->healthy())
      slot->conn.reset();
    if (!slot->conn) {
      kv::rdma_peer::config pc;
      pc.connect_timeout = cfg_.connect_timeout;
      pc.read_timeout = cfg_.read_timeout;
      slot->conn = kv::rdma_peer::connect(*parse_host_port(from), pc, &err);
      if (!slot->conn)
        return failed("cannot connect over RDMA to " + from + ": " + err + bypass_hint);
    }
    if (!slot->conn->read(d->address, d->rkey, bytes, &err)) {
      slot->conn.reset();  // reconnect next time; the parcel expires on the prefill node
      return failed("RDMA read of " + std::to_string(d->length) + " bytes from " + from + " failed: " + err
                    + bypass_hint);
    }
    if (!slot->conn->release(d->ticket, &err)) {
      log().warn("cannot release KV parcel {} on {} ({}); it expires there", d->ticket, from, err);
      slot->conn.reset();
    }
  }
  if (XXH3_64bits(bytes.data(), bytes.size()) != d->checksum)
    return failed("KV read over RDMA from " + from + " fails its checksum" + bypass_hint);
  in.packed = {};
  return bytes;
}

} // namespace deepinfer::actors
