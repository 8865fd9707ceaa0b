#pragma once

#include <cstdint>

namespace deepinfer::engine::ops {

/// out[r] = x[r] / rms(x[r]) * w for n rows of width h (out may alias x).
void rms_norm(const float* x, int64_t n, int64_t h, const float* w, float eps, float* out);

/// Rotates pairs (2i, 2i+1) of each head of one row by pos * theta^(-2i/head_dim), in place.
/// `cs` holds cos, sin of each pair's angle at `pos` (head_dim floats, see `rope_angles`).
void rope(float* row, int64_t heads, int64_t head_dim, const float* cs);

/// Fills `cs` [head_dim] with cos, sin of pos * theta^(-2i/head_dim) for each pair i.
void rope_angles(int64_t pos, int64_t head_dim, float theta, float* cs);

/// Dot product with a fixed summation order (8 interleaved partial sums, so it vectorizes).
float dot(const float* a, const float* b, int64_t n);

/// Grouped-query attention of one query row over `nk` gathered keys (ascending positions):
/// q [heads x d]; kt the keys transposed, [kv_heads x d] rows of `stride` floats whose first nk
/// entries are the keys (`kt[(g*d + i)*stride + j]`); v [nk x kv_heads x d]; out [heads x d].
/// Each score sums its d products in a fixed order, so a key's score never depends on nk.
/// `scores` needs nk floats.
void attend(const float* q, const float* kt, int64_t stride, const float* v, int64_t nk,
            int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out);

/// The same attention over keys stored as rows, k [nk x kv_heads x d] like v: for gathered keys
/// (the cross-attention's top-k picks), which a transpose would only cost. Each score is one
/// `dot`, so it never depends on nk either.
void attend_rows(const float* q, const float* k, const float* v, int64_t nk, int64_t heads,
                 int64_t kv_heads, int64_t d, float* scores, float* out);

/// Writes key row `src` [width] as column j of the transposed buffer `kt` [width x nk].
void put_column(float* kt, int64_t nk, int64_t j, const float* src, int64_t width);

/// Keys per indexer tile (`index_tile_scores`).
inline constexpr int64_t index_tile = 1024;

/// Indexer scores of `rows` queries (q [rows x heads x dim]) against one tile of `index_tile` keys
/// stored transposed (kt[i * index_tile + j] is component i of key j): out[r * stride + j] =
/// sum_h w[h] * relu(q[r,h] . k_j). Each score is computed the same way whatever the rows, the
/// tile or the machine's vector width within one process (an FMA chain over components, then
/// the heads in order), so a score never depends on the batch or the context.
void index_tile_scores(const float* q, int64_t rows, int64_t heads, int64_t dim, const float* w,
                       const float* kt, float* out, int64_t stride);

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
