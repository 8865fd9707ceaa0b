#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/swa_ring.hpp"

namespace deepinfer::engine {

/// Byte formats for moving KV between ranks and the block store (DESIGN.md §4). Each buffer
/// starts with a small versioned header: magic "DIKV", version, kind, the model fingerprint and
/// the geometry, so a buffer from another model or layout is refused, never misread.
///
/// - block: `tokens_per_block x floats_per_token` f32 rows of global KV + indexer key.
/// - window: for each layer of a stack, K then V of the last `count` positions ending at `end`,
///   plus the replay start `lo` (an SWA snapshot is the encoder stack's window).
class kv_codec {
public:
  /// What a window buffer holds.
  struct window_info {
    int64_t end = 0;
    int64_t count = 0;
    int64_t lo = 0;
  };

  static std::vector<std::byte> encode_block(const float* rows, int64_t tokens,
                                             int64_t floats_per_token,
                                             const std::string& fingerprint);
  /// Bytes of a block buffer of `tokens` rows (header included).
  static std::size_t block_bytes(int64_t tokens, int64_t floats_per_token);
  /// Writes a block buffer's header into `out` (at least 64 bytes); its rows follow it, written
  /// by the caller straight from wherever they live (no staging copy of a long sequence).
  static void write_block_header(std::span<std::byte> out, int64_t tokens,
                                 int64_t floats_per_token, const std::string& fingerprint);
  /// The rows of a block buffer after checking its header and size (no copy); error or empty.
  static std::string block_rows(std::span<const std::byte> bytes, int64_t tokens,
                                int64_t floats_per_token, const std::string& fingerprint,
                                std::span<const std::byte>& rows);
  /// Copies a block buffer into `rows`; returns an error text or empty.
  static std::string decode_block(std::span<const std::byte> bytes, int64_t tokens,
                                  int64_t floats_per_token, const std::string& fingerprint,
                                  float* rows);

  /// Encodes the last min(ring size, held) positions of each ring (all rings must agree on end).
  static std::vector<std::byte> encode_window(std::span<const swa_ring> rings, int64_t lo,
                                              const std::string& fingerprint);
  /// Refills `rings` (already shaped) from a window buffer; returns an error text or empty.
  static std::string decode_window(std::span<const std::byte> bytes,
                                   const std::string& fingerprint, std::span<swa_ring> rings,
                                   window_info& info);
  /// Bytes of the window buffer that starts `bytes` (header included), as its header declares;
  /// 0 when `bytes` does not start with a window header. Lets windows be concatenated (an exact
  /// snapshot is the encoder window followed by the decoder window).
  static std::size_t window_bytes(std::span<const std::byte> bytes);
};

} // namespace deepinfer::engine
