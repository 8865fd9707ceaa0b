#include "kv/rdma/rdma_descriptor.hpp"

#include "recipe/base/host_port.hpp"

#include <algorithm>
#include <charconv>

#include <xxhash.h>

namespace deepinfer::kv {

namespace {

/// 'DKVR': a descriptor, not some other packed payload.
constexpr uint32_t descriptor_magic = 0x52564b44;
/// Bumped whenever the layout changes: a node of another build refuses clearly.
constexpr uint32_t descriptor_version = 1;
constexpr std::size_t max_endpoint = 255;

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
}

/// Reads little-endian fields off the front of a span; `ok` drops to false once one is short.
struct reader {
  std::span<const uint8_t> in;
  bool ok = true;

  template <class T>
  T get() {
    T v = 0;
    if (in.size() < sizeof(T)) {
      ok = false;
      return v;
    }
    for (std::size_t i = 0; i < sizeof(T); ++i)
      v = static_cast<T>(v | (static_cast<T>(in[i]) << (8 * i)));
    in = in.subspan(sizeof(T));
    return v;
  }
};

} // namespace

std::vector<uint8_t> encode_rdma_descriptor(const rdma_descriptor& d) {
  std::vector<uint8_t> out;
  out.reserve(64 + d.endpoint.size());
  put(out, descriptor_magic);
  put(out, descriptor_version);
  put(out, d.id);
  put(out, d.ticket);
  put(out, d.address);
  put(out, d.rkey);
  put(out, d.length);
  put(out, d.checksum);
  auto n = std::min(d.endpoint.size(), max_endpoint);
  put(out, static_cast<uint16_t>(n));
  out.insert(out.end(), d.endpoint.begin(), d.endpoint.begin() + static_cast<std::ptrdiff_t>(n));
  put(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

std::optional<rdma_descriptor> decode_rdma_descriptor(std::span<const uint8_t> bytes, std::string* error) {
  if (bytes.size() < sizeof(uint64_t)) {
    *error = "truncated RDMA KV descriptor (" + std::to_string(bytes.size()) + " bytes)";
    return std::nullopt;
  }
  auto body = bytes.first(bytes.size() - sizeof(uint64_t));
  reader tail{bytes.last(sizeof(uint64_t))};
  if (tail.get<uint64_t>() != XXH3_64bits(body.data(), body.size())) {
    *error = "damaged or truncated RDMA KV descriptor (checksum mismatch)";
    return std::nullopt;
  }
  reader r{body};
  auto magic = r.get<uint32_t>();
  auto version = r.get<uint32_t>();
  if (r.ok && magic != descriptor_magic) {
    *error = "not an RDMA KV descriptor";
    return std::nullopt;
  }
  if (r.ok && version != descriptor_version) {
    *error = "RDMA KV descriptor version " + std::to_string(version) + ", this node reads "
             + std::to_string(descriptor_version) + ": run the same build on every node";
    return std::nullopt;
  }
  rdma_descriptor d;
  d.id = r.get<uint64_t>();
  d.ticket = r.get<uint64_t>();
  d.address = r.get<uint64_t>();
  d.rkey = r.get<uint32_t>();
  d.length = r.get<uint64_t>();
  d.checksum = r.get<uint64_t>();
  auto n = r.get<uint16_t>();
  if (!r.ok || r.in.size() != n) {
    *error = "malformed RDMA KV descriptor (field sizes do not add up)";
    return std::nullopt;
  }
  d.endpoint.assign(reinterpret_cast<const char*>(r.in.data()), n);
  if (!parse_host_port(d.endpoint)) {
    *error = "RDMA KV descriptor names no valid endpoint ('" + d.endpoint + "')";
    return std::nullopt;
  }
  return d;
}

} // namespace deepinfer::kv
