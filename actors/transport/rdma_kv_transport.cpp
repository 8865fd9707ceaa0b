#include "actors/transport/rdma_kv_transport.hpp"

#include <infiniband/verbs.h>
#include <xxhash.h>

#include "actors/log.hpp"
#include "actors/transport/rdma_descriptor.hpp"
#include "actors/transport/rdma_listener.hpp"
#include "actors/transport/rdma_peer.hpp"

namespace deepinfer::actors {

namespace {

/// What every decode-side error ends with: the way around RDMA.
constexpr const char* bypass_hint = "; set kv_transport = caf_message in the manifest (or --kv-transport caf_message) "
                                    "to bypass RDMA";

} // namespace

rdma_kv_transport::rdma_kv_transport(kv_transport& fallback) : rdma_kv_transport(fallback, config{}) {}

rdma_kv_transport::rdma_kv_transport(kv_transport& fallback, config cfg) : cfg_(cfg), fallback_(fallback) {}

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
  rdma_listener::callbacks cb;
  cb.on_release = [this](uint64_t ticket) { release(ticket); };
  cb.on_tick = [this] { expire(); };
  auto l = rdma_listener::open({host, port}, std::move(cb), &err);
  if (!l)
    return "cannot start the RDMA KV listener on " + host + ": " + err;
  endpoint_ = format_rdma_endpoint(host, l->port());
  listener_ = std::move(l);
  log().info("RDMA KV listener on {}", endpoint_);
  return std::nullopt;
}

std::string rdma_kv_transport::endpoint() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return endpoint_;
}

std::size_t rdma_kv_transport::parked() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return parcels_.size();
}

bool rdma_kv_transport::fall_back(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out,
                                  std::string* error, const std::string& why) {
  log().warn("request={} KV goes as {} instead of RDMA: {}", id, fallback_.name(), why);
  return fallback_.send(id, std::move(sequence), out, error);
}

bool rdma_kv_transport::send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out, std::string* error) {
  rdma_listener* listener = nullptr;
  std::string endpoint;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    listener = listener_.get();
    endpoint = endpoint_;
  }
  if (!listener)
    return fall_back(id, std::move(sequence), out, error, "the RDMA KV listener is not running");
  if (sequence.empty())
    return fall_back(id, std::move(sequence), out, error, "empty sequence");
  std::string err;
  // Registration pins the pages: the slow part, done outside the lock.
  std::unique_ptr<ibv_mr, int (*)(ibv_mr*)> mr{listener->register_for_read(sequence.data(), sequence.size(), &err),
                                                &ibv_dereg_mr};
  if (!mr)
    return fall_back(id, std::move(sequence), out, error, err);
  rdma_descriptor d;
  d.id = id;
  d.endpoint = endpoint;
  d.address = reinterpret_cast<uintptr_t>(sequence.data());
  d.rkey = mr->rkey;
  d.length = sequence.size();
  d.checksum = XXH3_64bits(sequence.data(), sequence.size());
  {
    std::lock_guard<std::mutex> guard{mtx_};
    d.ticket = next_ticket_++;
    // The vector's buffer moves with it: the registered address stays valid.
    parcels_.emplace(d.ticket, parcel{std::move(sequence), std::move(mr), std::chrono::steady_clock::now()});
  }
  expire();
  out.id = id;
  out.transport = name();
  out.ticket = d.ticket;
  out.packed = encode_rdma_descriptor(d);
  return true;
}

void rdma_kv_transport::release(uint64_t ticket) {
  std::lock_guard<std::mutex> guard{mtx_};
  parcels_.erase(ticket);
}

void rdma_kv_transport::expire() {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto i = parcels_.begin(); i != parcels_.end();)
    i = now - i->second.parked > cfg_.ttl ? parcels_.erase(i) : std::next(i);
}

std::shared_ptr<rdma_kv_transport::peer_slot> rdma_kv_transport::slot_for(const std::string& endpoint) {
  std::lock_guard<std::mutex> guard{peers_mtx_};
  auto& s = peers_[endpoint];
  if (!s)
    s = std::make_shared<peer_slot>();
  return s;
}

std::optional<std::vector<std::byte>> rdma_kv_transport::receive(kv_handoff& in, std::string* error) {
  std::string err;
  auto d = decode_rdma_descriptor(in.packed, &err);
  if (!d) {
    *error = "cannot read the RDMA KV descriptor: " + err;
    return std::nullopt;
  }
  if (d->id != in.id) {
    *error = "RDMA KV descriptor does not match its handoff (id " + std::to_string(d->id) + " vs "
             + std::to_string(in.id) + ")";
    return std::nullopt;
  }
  auto from = d->endpoint;
  if (rdma_device_count() == 0) {
    *error = "cannot read KV over RDMA from " + from + ": this node has no RDMA device" + bypass_hint;
    return std::nullopt;
  }
  std::vector<std::byte> bytes(d->length);
  {
    auto slot = slot_for(from);
    std::lock_guard<std::mutex> guard{slot->mtx};
    if (slot->conn && !slot->conn->healthy())
      slot->conn.reset();
    if (!slot->conn) {
      rdma_peer::config pc;
      pc.connect_timeout = cfg_.connect_timeout;
      pc.read_timeout = cfg_.read_timeout;
      slot->conn = rdma_peer::connect(*parse_rdma_endpoint(from), pc, &err);
      if (!slot->conn) {
        *error = "cannot connect over RDMA to " + from + ": " + err + bypass_hint;
        return std::nullopt;
      }
    }
    if (!slot->conn->read(d->address, d->rkey, bytes, &err)) {
      slot->conn.reset();  // reconnect next time; the parcel expires on the prefill node
      *error = "RDMA read of " + std::to_string(d->length) + " bytes from " + from + " failed: " + err + bypass_hint;
      return std::nullopt;
    }
    if (!slot->conn->release(d->ticket, &err)) {
      log().warn("cannot release KV parcel {} on {} ({}); it expires there", d->ticket, from, err);
      slot->conn.reset();
    }
  }
  if (XXH3_64bits(bytes.data(), bytes.size()) != d->checksum) {
    *error = "KV read over RDMA from " + from + " fails its checksum" + bypass_hint;
    return std::nullopt;
  }
  in.packed = {};
  return bytes;
}

} // namespace deepinfer::actors
