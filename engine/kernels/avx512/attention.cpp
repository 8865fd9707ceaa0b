// AVX-512 attention in the canonical orders, for heads of width 32 (two vectors; rows of a block
// too) or 16 (one vector: rows of a block, the vision encoder's heads); other shapes run the AVX2
// kernels (the same bits).
#include <algorithm>
#include <cmath>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"
#include "engine/kernels/prefetch.hpp"

#include "engine/kernels/target_avx512.hpp"
#include "engine/kernels/avx512/vec.hpp"

namespace deepinfer::engine::kernels::avx512 {

namespace {

constexpr int64_t max_rows = 8; // rows of one tile: 2 x 8 score / value accumulators

// One head's scores of R rows over the block's union of keys [u0, u0 + nu), into sc (R rows of
// `su` floats): a tile of R rows x 32 keys, each score a chain over the d = 16 C components, then
// the scale. Rows score keys outside their window too (at most R - 1 of them: wasted, never used).
template <int R, int C>
void union_scores(const float* q, int64_t qstride, const float* kg, int64_t stride, int64_t u0,
                  int64_t nu, float* sc, int64_t su) {
  constexpr int64_t d = 16 * C;
  const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(static_cast<float>(d)));
  for (int64_t j = 0; j < nu; j += 32) {
    const __mmask16 m0 = lane_mask(nu - j), m1 = lane_mask(nu - j - 16);
    __m512 a0[R], a1[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
      a0[r] = a1[r] = _mm512_setzero_ps();
    const float* k = kg + u0 + j;
    for (int64_t i = 0; i < d; ++i) {
      const __m512 k0 = _mm512_maskz_loadu_ps(m0, k + i * stride);
      const __m512 k1 = _mm512_maskz_loadu_ps(m1, k + i * stride + 16);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 qv = _mm512_set1_ps(q[r * qstride + i]);
        a0[r] = _mm512_fmadd_ps(qv, k0, a0[r]);
        a1[r] = _mm512_fmadd_ps(qv, k1, a1[r]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      _mm512_mask_storeu_ps(sc + r * su + j, m0, _mm512_mul_ps(a0[r], scale));
      _mm512_mask_storeu_ps(sc + r * su + j + 16, m1, _mm512_mul_ps(a1[r], scale));
    }
  }
}

// One head's outputs of R rows, C vectors of 16 components: out_r = chain over the union's keys
// of w_r[j] x v_j, where w_r (in sc) is the row's softmax weight (scores x inv) inside its window
// and exactly 0 outside. A zero weight adds a signed zero to a sum that is never -0 (it starts at
// +0 and +0 + -0 = +0), so the chain over the union equals the chain over the row's own keys, bit
// for bit.
template <int R, int C>
void union_values(const float* sc, int64_t su, const float* vg, int64_t kvw, int64_t u0, int64_t nu,
                  float* out, int64_t qstride) {
  __m512 a[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c)
      a[r][c] = _mm512_setzero_ps();
  for (int64_t j = 0; j < nu; ++j) {
    const float* vj = vg + (u0 + j) * kvw;
    __m512 vv[C];
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c)
      vv[c] = _mm512_loadu_ps(vj + 16 * c);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 w = _mm512_set1_ps(sc[r * su + j]);
#pragma GCC unroll 2
      for (int c = 0; c < C; ++c)
        a[r][c] = _mm512_fmadd_ps(w, vv[c], a[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c)
      _mm512_storeu_ps(out + r * qstride + 16 * c, a[r][c]);
}

// Rows [0, R) of a block (R <= max_rows), every head of width 16 C.
template <int R, int C>
void attend_block(const float* q, int64_t qstride, const int64_t* first, const int64_t* count,
                  const float* kt, int64_t stride, const float* v, int64_t heads, int64_t kv_heads,
                  float* scores, float* out) {
  constexpr int64_t d = 16 * C;
  const int64_t group = heads / kv_heads, kvw = kv_heads * d;
  const int64_t u0 = first[0], nu = first[R - 1] + count[R - 1] - u0;
  const int64_t su = (nu + 31) / 32 * 32;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / group;
    union_scores<R, C>(q + h * d, qstride, kt + g * d * stride, stride, u0, nu, scores, su);
    for (int r = 0; r < R; ++r) {
      // The row's softmax over its own keys (the canonical lanes start at its first key), then
      // zero weights around them.
      float* row = scores + r * su;
      const int64_t lo = first[r] - u0, n = count[r];
      __m512 mx = _mm512_set1_ps(-INFINITY);
      for (int64_t j = 0; j < n; j += 16)
        mx = _mm512_mask_max_ps(mx, lane_mask(n - j), mx, _mm512_maskz_loadu_ps(lane_mask(n - j), row + lo + j));
      // The weights scores x inv: each the product the portable kernel forms per key.
      const __m512 inv = _mm512_set1_ps(exp_shifted(row + lo, n, hmax(mx)));
      for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = lane_mask(n - j);
        _mm512_mask_storeu_ps(row + lo + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + lo + j), inv));
      }
      std::fill(row, row + lo, 0.0f);
      std::fill(row + lo + n, row + nu, 0.0f);
    }
    union_values<R, C>(scores, su, v + g * d, kvw, u0, nu, out + h * d, qstride);
  }
}

using block_fn = void (*)(const float*, int64_t, const int64_t*, const int64_t*, const float*, int64_t,
                          const float*, int64_t, int64_t, float*, float*);
constexpr block_fn by_rows[3][max_rows + 1] = {
    {},
    {nullptr, attend_block<1, 1>, attend_block<2, 1>, attend_block<3, 1>, attend_block<4, 1>,
     attend_block<5, 1>, attend_block<6, 1>, attend_block<7, 1>, attend_block<8, 1>},
    {nullptr, attend_block<1, 2>, attend_block<2, 2>, attend_block<3, 2>, attend_block<4, 2>,
     attend_block<5, 2>, attend_block<6, 2>, attend_block<7, 2>, attend_block<8, 2>}};

} // namespace

void attend_rows(const float* q, int64_t rows, int64_t qstride, const int64_t* first,
                 const int64_t* count, const float* kt, int64_t stride, const float* v,
                 int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  if (d != 16 && d != 32) {
    avx2::attend_rows(q, rows, qstride, first, count, kt, stride, v, heads, kv_heads, d, scores, out);
    return;
  }
  for (int64_t r = 0; r < rows; r += max_rows)
    by_rows[d / 16][std::min(max_rows, rows - r)](q + r * qstride, qstride, first + r, count + r, kt, stride, v,
                                          heads, kv_heads, scores, out + r * qstride);
}

// Each score is dot16 of two vectors (two chained FMAs, then fold16); the heads of one KV group go
// together, so each pick's K and V are loaded once for all of them.
void attend_gathered(const float* q, const float* const* kv, int64_t v_offset, int64_t nk,
                     int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  constexpr int64_t max_group = 8;
  const int64_t group = heads / kv_heads;
  if (d != 32 || group > max_group) {
    avx2::attend_gathered(q, kv, v_offset, nk, heads, kv_heads, d, scores, out);
    return;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t g = 0; g < kv_heads; ++g) {
    __m512 q0[max_group], q1[max_group];
    float mx[max_group];
    for (int64_t e = 0; e < group; ++e) {
      q0[e] = _mm512_loadu_ps(q + (g * group + e) * d);
      q1[e] = _mm512_loadu_ps(q + (g * group + e) * d + 16);
      mx[e] = -INFINITY;
    }
    // scores[e * nk + j]: head g * group + e against pick j.
    for (int64_t j = 0; j < nk; ++j) {
      if (j + gather_ahead < nk)
        prefetch_span(kv[j + gather_ahead] + g * d, d);
      const float* k = kv[j] + g * d;
      const __m512 k0 = _mm512_loadu_ps(k), k1 = _mm512_loadu_ps(k + 16);
      for (int64_t e = 0; e < group; ++e) {
        const float sc = fold16(_mm512_fmadd_ps(q1[e], k1, _mm512_fmadd_ps(q0[e], k0, zero))) * scale;
        scores[e * nk + j] = sc;
        mx[e] = sc > mx[e] ? sc : mx[e];
      }
    }
    __m512 a0[max_group], a1[max_group];
    float inv[max_group];
    for (int64_t e = 0; e < group; ++e) {
      inv[e] = exp_shifted(scores + e * nk, nk, mx[e]);
      a0[e] = a1[e] = zero;
    }
    for (int64_t j = 0; j < nk; ++j) {
      if (j + gather_ahead < nk)
        prefetch_span(kv[j + gather_ahead] + v_offset + g * d, d);
      const float* v = kv[j] + v_offset + g * d;
      const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
      for (int64_t e = 0; e < group; ++e) {
        const __m512 wj = _mm512_set1_ps(scores[e * nk + j] * inv[e]);
        a0[e] = _mm512_fmadd_ps(wj, v0, a0[e]);
        a1[e] = _mm512_fmadd_ps(wj, v1, a1[e]);
      }
    }
    for (int64_t e = 0; e < group; ++e) {
      _mm512_storeu_ps(out + (g * group + e) * d, a0[e]);
      _mm512_storeu_ps(out + (g * group + e) * d + 16, a1[e]);
    }
  }
}

} // namespace deepinfer::engine::kernels::avx512

#include "engine/kernels/target_end.hpp"
