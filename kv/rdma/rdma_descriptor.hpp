#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::kv {

/// What an RDMA KV handoff carries instead of the KV (DESIGN §1 step 5, pull model): where the
/// prefill node parked the registered sequence buffer and how to check what the decode side
/// reads. Travels in `kv_handoff::packed`; its own checksum makes a damaged descriptor an error
/// rather than a read of someone else's memory.
struct rdma_descriptor {
  uint64_t id = 0;
  /// The prefill node's RDMA listener, `HOST:PORT` (`[V6]:PORT` for IPv6).
  std::string endpoint;
  /// Names the parcel on the prefill node (released once read).
  uint64_t ticket = 0;
  uint64_t address = 0;
  uint32_t rkey = 0;
  uint64_t length = 0;
  /// XXH3-64 of the sequence bytes.
  uint64_t checksum = 0;
};

/// The fixed little-endian layout of `d` (version, fields, XXH3 of all that precedes it).
std::vector<uint8_t> encode_rdma_descriptor(const rdma_descriptor& d);

/// The descriptor in `bytes`; nullopt and `error` when it is truncated, damaged, of another
/// version, has trailing bytes or names no valid endpoint (`parse_host_port`).
std::optional<rdma_descriptor> decode_rdma_descriptor(std::span<const uint8_t> bytes, std::string* error);

} // namespace deepinfer::kv
