#pragma once

#include <cstdint>

#include "engine/kernels/kernel_table.hpp"

namespace deepinfer::engine::ops {

// The forward's helpers that are not kernels of their own (the arithmetic kernels are the
// `kernels::kernel_table` of the backend's ISA).

/// Rotates pairs (2i, 2i+1) of each head of one row by pos * theta^(-2i/head_dim), in place.
/// `cs` holds cos, sin of each pair's angle at `pos` (head_dim floats, see `rope_angles`).
void rope(float* row, int64_t heads, int64_t head_dim, const float* cs);

/// Fills `cs` [count x head_dim] with cos, sin of pos * theta^(-2i/head_dim) for each pair i of
/// positions first .. first + count - 1.
void rope_angles(int64_t first, int64_t count, int64_t head_dim, float theta, float* cs);

/// Writes key rows src[0..m) [width] as columns j .. j + m - 1 of the transposed buffer `kt`
/// [width x nk] (a component's m keys in one contiguous write).
void put_columns(float* kt, int64_t nk, int64_t j, const float* const* src, int64_t m, int64_t width);

/// The `k` positions of the highest `scores` (n > k), ties to the earlier position, written to
/// `out` ascending: the same set as sorting by (score desc, position asc), whatever the ISA of
/// `kern`. `scratch` needs n uint32 values.
void top_k_positions(const kernels::kernel_table& kern, const float* scores, int64_t n, int64_t k,
                     int64_t* out, uint32_t* scratch);

} // namespace deepinfer::engine::ops
