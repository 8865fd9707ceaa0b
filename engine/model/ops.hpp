#pragma once

#include <cstdint>

namespace deepinfer::engine::ops {

/// out[r] = x[r] / rms(x[r]) * w for n rows of width h (out may alias x).
void rms_norm(const float* x, int64_t n, int64_t h, const float* w, float eps, float* out);

/// Rotates pairs (2i, 2i+1) of each head of one row by pos * theta^(-2i/head_dim), in place.
/// `cs` holds cos, sin of each pair's angle at `pos` (head_dim floats, see `rope_angles`).
void rope(float* row, int64_t heads, int64_t head_dim, const float* cs);

/// Fills `cs` [count x head_dim] with cos, sin of pos * theta^(-2i/head_dim) for each pair i of
/// positions first .. first + count - 1.
void rope_angles(int64_t first, int64_t count, int64_t head_dim, float theta, float* cs);

/// Dot product with a fixed summation order (8 interleaved partial sums, so it vectorizes).
float dot(const float* a, const float* b, int64_t n);

/// Grouped-query attention of one query row over `nk` gathered keys (ascending positions):
/// q [heads x d]; kt the keys transposed, [kv_heads x d] rows of `stride` floats whose first nk
/// entries are the keys (`kt[(g*d + i)*stride + j]`); v [nk x kv_heads x d]; out [heads x d].
/// Each score sums its d products in a fixed order, so a key's score never depends on nk.
/// `scores` needs nk floats.
void attend(const float* q, const float* kt, int64_t stride, const float* v, int64_t nk,
            int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out);

/// The same attention over keys found through pointers (the cross-attention's top-k picks,
/// scattered over the KV pool, which a copy or a transpose would only cost): key j is
/// kv[j] [kv_heads x d] and its value kv[j] + v_offset. Each score is one `dot`, so it never
/// depends on nk either.
/// `scores` needs heads * nk floats.
void attend_gathered(const float* q, const float* const* kv, int64_t v_offset, int64_t nk,
                     int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out);

/// Writes key row `src` [width] as column j of the transposed buffer `kt` [width x nk].
void put_column(float* kt, int64_t nk, int64_t j, const float* src, int64_t width);

/// The `k` positions of the highest `scores` (n > k), ties to the earlier position, written to
/// `out` ascending: the same set as sorting by (score desc, position asc), in two linear passes
/// (a radix histogram, then a small selection among the boundary bucket). `scratch` needs n
/// uint32 values.
void top_k_positions(const float* scores, int64_t n, int64_t k, int64_t* out, uint32_t* scratch);

/// a[i] = silu(a[i]) * b[i].
void silu_mul(float* a, const float* b, int64_t n);

/// x[i] += s * y[i].
void axpy(float* x, const float* y, float s, int64_t n);

} // namespace deepinfer::engine::ops
