#pragma once

#include <cstdint>

#include "engine/kernels/index_codes.hpp"

namespace deepinfer::engine::indexer {

// The decoder's indexer scores every earlier position of a long context for every query row of
// every decoder layer, which makes it the largest cost of a prefill that hits the cache. Like
// DeepSeek's FP8 lightning indexer it runs at low precision: keys are quantized to 8 bits and
// queries to 7 (kernels::index_query_limit), with one scale per key and one per query head, and
// the dot products are exact integer sums (the kernel tables' `index_key_record` /
// `index_score_tile`: VNNI, AVX2's vpmaddubsw or plain C++). The KV pool and the block store keep
// each key quantized (its record), so a prefix hit only copies codes into the score tiles. Integer sums do not depend on their order, so a score is the same on every ISA, for every
// batch and every context: prefill, chunked prefill and decode agree bit for bit.

/// Keys per tile.
inline constexpr int64_t tile = kernels::index_tile;

/// Components per packed group.
inline constexpr int64_t group = kernels::index_group;

/// Bytes of one tile's key codes for keys of width `dim` (padded to whole groups).
inline int64_t tile_code_bytes(int64_t dim) {
  return kernels::index_tile_bytes(dim);
}

/// Fills slot `j` of a tile with a zero key (the padding past the context).
void put_zero_key(int64_t dim, int64_t j, uint8_t* codes, float* scales);

/// Copies a key's record (`kernels::index_record_bytes`, as the kernel tables' `index_key_record`
/// writes it into the KV pool) into slot `j` of a tile: `codes` is the tile's code block
/// (tile_code_bytes(dim) bytes, laid out [dim/4][tile][4]) and `scales` its tile floats.
void put_record(const uint8_t* record, int64_t dim, int64_t j, uint8_t* codes, float* scales);

using query_codes = kernels::index_query_codes;

/// Bytes / entries `quantize_queries` needs per row.
inline int64_t query_code_bytes(int64_t heads, int64_t dim) {
  return heads * kernels::index_padded(dim);
}

/// Quantizes `rows` queries q [rows x heads x dim] with head weights w [heads] into `out`
/// (plain C++ on every ISA: a few rows per call).
void quantize_queries(const float* q, int64_t rows, int64_t heads, int64_t dim, const float* w,
                      const query_codes& out);

} // namespace deepinfer::engine::indexer
