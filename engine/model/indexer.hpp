#pragma once

#include <cstdint>

namespace deepinfer::engine::indexer {

// The decoder's indexer scores every earlier position of a long context for every query row of
// every decoder layer, which makes it the largest cost of a prefill that hits the cache. Like
// DeepSeek's FP8 lightning indexer it runs at low precision: keys and queries are quantized to
// 8 bits with one scale per key and one per query head, and the dot products are exact integer
// sums (AVX-512 VNNI where the CPU has it: four times the multiply-adds of f32 FMAs per
// instruction). Integer sums do not depend on their order, so a score is the same on every
// path, for every batch and every context: prefill, chunked prefill and decode agree bit for bit.

/// Keys per tile: a tile's codes (index_dim bytes per key) stay in the L1 cache for a block of rows.
inline constexpr int64_t tile = 1024;

/// Components per packed group (one 32-bit lane of a VNNI dot product).
inline constexpr int64_t group = 4;

/// Bytes of one tile's key codes for keys of width `dim` (padded to whole groups).
inline int64_t tile_code_bytes(int64_t dim) {
  return (dim + group - 1) / group * group * tile;
}

/// Quantizes key `k` [dim] into slot `j` (0 <= j < tile) of a tile: `codes` is the tile's code
/// block (tile_code_bytes(dim) bytes, laid out [dim/4][tile][4] as unsigned value + 128) and
/// `scales` its tile floats. A zero key gets scale 0 (every score 0).
void put_key(const float* k, int64_t dim, int64_t j, uint8_t* codes, float* scales);

/// Fills slot `j` of a tile with a zero key (the padding past the context).
void put_zero_key(int64_t dim, int64_t j, uint8_t* codes, float* scales);

/// The quantized queries of a row block: per row and head, `dim` rounded up to a whole group of
/// signed codes, the head's weight times its scale, and the correction for the keys' +128 offset.
struct query_codes {
  int8_t* codes = nullptr;  ///< [rows x heads x padded dim]
  float* coef = nullptr;    ///< [rows x heads] w_h * scale
  int32_t* offset = nullptr; ///< [rows x heads] 128 * sum of the codes
};

/// Bytes / entries `quantize_queries` needs per row.
inline int64_t query_code_bytes(int64_t heads, int64_t dim) {
  return heads * ((dim + group - 1) / group * group);
}

/// Quantizes `rows` queries q [rows x heads x dim] with head weights w [heads] into `out`.
void quantize_queries(const float* q, int64_t rows, int64_t heads, int64_t dim, const float* w,
                      const query_codes& out);

/// Scores of `rows` quantized queries against one tile: out[r * stride + j] =
/// scale_j * sum_h coef[r,h] * relu(q[r,h] . k_j) (heads summed in order, in f32).
void score_tile(const query_codes& q, int64_t rows, int64_t heads, int64_t dim,
                const uint8_t* codes, const float* scales, float* out, int64_t stride);

/// The kernels without SIMD (what CPUs without AVX-512 VNNI run), exposed so tests can check
/// that both paths give the same bits.
void put_key_portable(const float* k, int64_t dim, int64_t j, uint8_t* codes, float* scales);
void score_tile_portable(const query_codes& q, int64_t rows, int64_t heads, int64_t dim,
                         const uint8_t* codes, const float* scales, float* out, int64_t stride);

} // namespace deepinfer::engine::indexer
