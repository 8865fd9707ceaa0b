#pragma once

// The layout of the 8-bit indexer's codes (engine/model/indexer.hpp quantizes; the kernels score).

#include <cstdint>

namespace deepinfer::engine::kernels {

/// Largest magnitude of a query code. Keys are 8-bit (±127, stored + 128 as unsigned bytes);
/// queries 7-bit (±63), so that AVX2's vpmaddubsw, which adds two unsigned x signed byte products
/// into 16 bits with saturation, never saturates (2 x 255 x 63 = 32,130 < 32,767): its sums are
/// then exact, as VNNI's and the portable kernel's are.
inline constexpr int32_t index_query_limit = 63;

/// Keys per tile: a tile's codes (index_dim bytes per key) stay in the L1 cache for a block of rows.
inline constexpr int64_t index_tile = 1024;

/// Components per packed group (one 32-bit lane of a VNNI dot product).
inline constexpr int64_t index_group = 4;

/// `dim` rounded up to whole groups.
inline int64_t index_padded(int64_t dim) {
  return (dim + index_group - 1) / index_group * index_group;
}

/// Bytes of one tile's key codes for keys of width `dim`.
inline int64_t index_tile_bytes(int64_t dim) {
  return index_padded(dim) * index_tile;
}

/// Bytes of one key's record in the KV pool (and so in the block store): its codes (signed + 128,
/// `index_padded(dim)` bytes), then its f32 scale. The indexer key is cached the way the indexer
/// reads it, like DeepSeek's FP8 indexer cache: a prefix hit copies codes into tiles instead of
/// quantizing every key of the context again.
inline int64_t index_record_bytes(int64_t dim) {
  return index_padded(dim) + 4;
}

/// Byte of component i of slot j in a tile's code block, laid out [dim/4][tile][4] as the signed
/// code + 128 (what `vpdpbusd` multiplies as unsigned bytes).
inline int64_t index_code_at(int64_t i, int64_t j) {
  return ((i / index_group) * index_tile + j) * index_group + i % index_group;
}

/// The quantized queries of a row block: per row and head, `dim` rounded up to a whole group of
/// signed codes in [-index_query_limit, index_query_limit], the head's weight times its scale,
/// and the correction for the keys' +128 offset.
struct index_query_codes {
  int8_t* codes = nullptr;   ///< [rows x heads x padded dim]
  float* coef = nullptr;     ///< [rows x heads] w_h * scale
  int32_t* offset = nullptr; ///< [rows x heads] 128 * sum of the codes
};

} // namespace deepinfer::engine::kernels
