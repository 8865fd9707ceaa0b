#include "actors/transport/kv_transport.hpp"

#include <algorithm>
#include <cstring>
#include <streambuf>

#include <cereal/archives/binary.hpp>
#include <xxhash.h>

#include "actors/errors.hpp"
#include "actors/log.hpp"

#ifdef DEEPINFER_HAVE_RDMA
#include "actors/transport/rdma_kv_transport.hpp"
#endif

namespace deepinfer::actors {

namespace {

/// Bumped whenever the packed layout changes: a decode node of another build refuses, clearly.
constexpr uint32_t package_version = 1;

/// Appends what cereal writes to a byte vector (no intermediate string).
class vector_sink final : public std::streambuf {
public:
  explicit vector_sink(std::vector<uint8_t>& out) : out_(out) {}

protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.insert(out_.end(), reinterpret_cast<const uint8_t*>(s), reinterpret_cast<const uint8_t*>(s) + n);
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof())
      out_.push_back(static_cast<uint8_t>(c));
    return c;
  }

private:
  std::vector<uint8_t>& out_;
};

/// Reads cereal's input straight from a byte span.
class span_source final : public std::streambuf {
public:
  explicit span_source(std::span<const uint8_t> in) {
    auto* p = const_cast<char*>(reinterpret_cast<const char*>(in.data()));
    setg(p, p, p + in.size());
  }
};

uint64_t checksum(std::span<const std::byte> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

} // namespace

// -- in_process ------------------------------------------------------------------------------

in_process_kv_transport::in_process_kv_transport(std::chrono::milliseconds ttl) : parcels_(ttl) {}

caf::error in_process_kv_transport::send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out) {
  out.id = id;
  out.transport = kind();
  out.packed.clear();
  out.ticket = parcels_.park(std::move(sequence));
  return {};
}

caf::expected<std::vector<std::byte>> in_process_kv_transport::receive(kv_handoff& in) {
  if (auto bytes = parcels_.take(in.ticket))
    return std::move(*bytes);
  return make_error(errc::kv_parcel_gone, "in-process KV parcel " + std::to_string(in.ticket)
                                            + " is gone (expired or from another process)");
}

// -- caf_message -----------------------------------------------------------------------------

caf::error caf_message_kv_transport::send(uint64_t id, std::vector<std::byte> sequence, kv_handoff& out) {
  out.id = id;
  out.transport = kind();
  out.ticket = 0;
  out.packed.clear();
  out.packed.reserve(sequence.size() + 64);
  vector_sink sink{out.packed};
  std::ostream os{&sink};
  {
    cereal::BinaryOutputArchive ar{os};
    uint64_t size = sequence.size();
    ar(package_version, id, size, checksum(sequence));
    ar(cereal::binary_data(sequence.data(), sequence.size()));
  }
  return {};
}

caf::expected<std::vector<std::byte>> caf_message_kv_transport::receive(kv_handoff& in) {
  auto corrupt = [](std::string what) { return make_error(errc::kv_package_corrupt, std::move(what)); };
  span_source source{in.packed};
  std::istream is{&source};
  uint32_t version = 0;
  uint64_t id = 0;
  uint64_t size = 0;
  uint64_t sum = 0;
  std::vector<std::byte> bytes;
  try {
    cereal::BinaryInputArchive ar{is};
    ar(version, id, size, sum);
    if (version != package_version) {
      return corrupt("KV package version " + std::to_string(version) + ", this node reads "
                     + std::to_string(package_version) + ": run the same build on every node");
    }
    if (id != in.id || size > in.packed.size()) {
      return corrupt("KV package does not match its handoff (id " + std::to_string(id) + " vs "
                     + std::to_string(in.id) + ")");
    }
    bytes.resize(size);
    ar(cereal::binary_data(bytes.data(), bytes.size()));
  } catch (const std::exception& e) {
    return corrupt(std::string{"truncated KV package: "} + e.what());
  }
  if (checksum(bytes) != sum)
    return corrupt("KV package checksum mismatch");
  in.packed = {};  // the packed copy is no longer needed
  return bytes;
}

// -- choice ----------------------------------------------------------------------------------

namespace {

in_process_kv_transport& in_process_instance() {
  static in_process_kv_transport t;
  return t;
}

caf_message_kv_transport& caf_message_instance() {
  static caf_message_kv_transport t;
  return t;
}

/// How this process moves KV across processes, set once a node starts.
struct process_choice {
  std::mutex mtx;
  kv_transport_mode mode = kv_transport_mode::automatic;
  int devices = -1;  ///< counted on first use
#ifdef DEEPINFER_HAVE_RDMA
  /// Deliberately never destroyed: its listener thread may still run while statics go at exit.
  rdma_kv_transport* rdma = new rdma_kv_transport(caf_message_instance());
  bool listening = false;
#endif
};

process_choice& choice() {
  static process_choice c;
  return c;
}

} // namespace

std::optional<std::string> configure_kv_transports(kv_transport_mode mode, const std::string& host, uint16_t port) {
  auto& c = choice();
  std::lock_guard<std::mutex> guard{c.mtx};
  c.mode = mode;
  if (mode == kv_transport_mode::caf_message)
    return std::nullopt;
  const char* hint = "; use kv_transport = auto or caf_message on this node";
#ifdef DEEPINFER_HAVE_RDMA
  if (c.listening)
    return std::nullopt;
  if (rdma_device_count() == 0) {
    if (mode == kv_transport_mode::rdma)
      return std::string{"kv_transport = rdma, but this node has no RDMA device"} + hint;
    return std::nullopt;
  }
  if (auto err = c.rdma->start(host, port)) {
    if (mode == kv_transport_mode::rdma)
      return "kv_transport = rdma: " + *err + hint;
    log().info("KV moves as CAF messages across processes: {}", *err);
    return std::nullopt;
  }
  c.listening = true;
  return std::nullopt;
#else
  (void)host;
  (void)port;
  if (mode == kv_transport_mode::rdma)
    return std::string{"kv_transport = rdma, but this build has no RDMA transport (install libibverbs-dev "
                       "and librdmacm-dev and rebuild)"} + hint;
  return std::nullopt;
#endif
}

std::string local_rdma_endpoint() {
#ifdef DEEPINFER_HAVE_RDMA
  auto& c = choice();
  std::lock_guard<std::mutex> guard{c.mtx};
  return c.listening ? c.rdma->endpoint() : std::string{};
#else
  return {};
#endif
}

kv_transport& choose_kv_transport(bool same_process, bool peer_rdma) {
  auto& c = choice();
  std::lock_guard<std::mutex> guard{c.mtx};
  kv_transport_facts f;
  f.same_process = same_process;
  f.mode = c.mode;
  f.peer_rdma = peer_rdma;
#ifdef DEEPINFER_HAVE_RDMA
  f.rdma_compiled = true;
  f.rdma_listening = c.listening;
  if (c.devices < 0 && (c.listening || peer_rdma))
    c.devices = rdma_device_count();
  f.rdma_devices = std::max(c.devices, 0);
#endif
  switch (decide_kv_transport(f)) {
    case kv_transport_kind::in_process:
      return in_process_instance();
#ifdef DEEPINFER_HAVE_RDMA
    case kv_transport_kind::rdma:
      return *c.rdma;
#endif
    default:
      return caf_message_instance();
  }
}

kv_transport* kv_transport_of(kv_transport_kind kind) {
  switch (kind) {
    case kv_transport_kind::in_process:
      return &in_process_instance();
    case kv_transport_kind::caf_message:
      return &caf_message_instance();
    case kv_transport_kind::rdma:
#ifdef DEEPINFER_HAVE_RDMA
      return choice().rdma;
#else
      return nullptr;
#endif
  }
  return nullptr;
}

} // namespace deepinfer::actors
