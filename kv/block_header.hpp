#pragma once

#include "kv/block_key.hpp"
#include "kv/hash_chain.hpp"
#include "kv/traffic_class.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace deepinfer::kv {

/// The fixed 96-byte header in front of every block file (little-endian):
///
/// | offset | bytes | field                                          |
/// |-------:|------:|------------------------------------------------|
/// |      0 |     8 | magic `DIKVBLK1`                               |
/// |      8 |     4 | format version (1)                             |
/// |     12 |     1 | traffic class; 3 bytes zero                    |
/// |     16 |     8 | payload length                                 |
/// |     24 |     8 | created, ms since the epoch                    |
/// |     32 |    16 | model fingerprint (lo, hi)                     |
/// |     48 |    16 | block key (lo, hi)                             |
/// |     64 |     8 | XXH3-64 of the payload                         |
/// |     72 |    16 | zero (reserved)                                |
/// |     88 |     8 | XXH3-64 of bytes [0, 88)                       |
struct block_header {
  static constexpr std::size_t size = 96;
  static constexpr uint32_t current_version = 1;

  uint32_t version = current_version;
  traffic_class cls = traffic_class::chatbot;
  uint64_t payload_length = 0;
  int64_t created_ms = 0;
  model_fingerprint fingerprint;
  block_key key;
  uint64_t payload_checksum = 0;

  /// The header for `payload` (computes its checksum).
  static block_header make(const block_key& key, model_fingerprint fp, traffic_class cls,
                           int64_t created_ms, std::span<const std::byte> payload);

  /// The encoded bytes.
  std::array<std::byte, size> encode() const;

  /// Decodes and checks magic, version and header checksum; `nullopt` if any is wrong.
  static std::optional<block_header> decode(std::span<const std::byte> bytes);

  /// True if `payload` has this header's length and checksum.
  bool matches(std::span<const std::byte> payload) const;
};

} // namespace deepinfer::kv
