// AVX2 attention in the canonical orders: scores of 8 keys per vector (chains over the head's
// components), values 8 components per vector (chains over the keys). Shapes the vectors do not
// cover (head widths not a multiple of 8 / 16) run the portable kernel: the same bits, slower.
#include <algorithm>
#include <cmath>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"
#include "engine/kernels/prefetch.hpp"

#include "engine/kernels/target_avx2.hpp"
#include "engine/kernels/avx2/vec.hpp"

namespace deepinfer::engine::kernels::avx2 {

namespace {

constexpr int64_t max_chunks = 8; // value vectors kept in registers: heads up to 64 wide

// oh[i] = chain over j of (scores[j] * inv) x v_j[i] for the value rows `vrow(j)`, d = 8 * chunks.
template <typename Row>
inline void weighted_values(const float* scores, float inv, int64_t nk, int64_t chunks, Row vrow,
                            float* oh) {
  for (int64_t c0 = 0; c0 < chunks; c0 += max_chunks) {
    const int64_t cc = std::min(max_chunks, chunks - c0);
    __m256 acc[max_chunks];
    for (int64_t c = 0; c < cc; ++c)
      acc[c] = _mm256_setzero_ps();
    for (int64_t j = 0; j < nk; ++j) {
      const __m256 wj = _mm256_set1_ps(scores[j] * inv);
      const float* vj = vrow(j) + c0 * 8;
      for (int64_t c = 0; c < cc; ++c)
        acc[c] = _mm256_fmadd_ps(wj, _mm256_loadu_ps(vj + c * 8), acc[c]);
    }
    for (int64_t c = 0; c < cc; ++c)
      _mm256_storeu_ps(oh + (c0 + c) * 8, acc[c]);
  }
}

} // namespace

namespace {

constexpr int64_t max_rows = 8; // rows per block sharing one key union

// One head's scores of R rows (R <= 4) over keys [u0, u0 + nu) into sc (rows `su` floats apart):
// a tile of R rows x 16 keys, each score a chain over the d components, then the scale.
template <int R>
void union_scores(const float* q, int64_t qstride, const float* kg, int64_t stride, int64_t u0,
                  int64_t nu, int64_t d, float* sc, int64_t su) {
  const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(static_cast<float>(d)));
  for (int64_t j = 0; j < nu; j += 16) {
    const bool full = nu - j >= 16;
    const __m256i m0 = lane_mask(nu - j), m1 = lane_mask(nu - j - 8);
    __m256 a0[R], a1[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      a0[r] = a1[r] = _mm256_setzero_ps();
    const float* k = kg + u0 + j;
    for (int64_t i = 0; i < d; ++i) {
      const float* ki = k + i * stride;
      const __m256 k0 = full ? _mm256_loadu_ps(ki) : _mm256_maskload_ps(ki, m0);
      const __m256 k1 = full ? _mm256_loadu_ps(ki + 8) : _mm256_maskload_ps(ki + 8, m1);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256 qv = _mm256_broadcast_ss(q + r * qstride + i);
        a0[r] = _mm256_fmadd_ps(qv, k0, a0[r]);
        a1[r] = _mm256_fmadd_ps(qv, k1, a1[r]);
      }
    }
    // Masked stores only for the last, partial tile: AMD cores run vmaskmovps stores slowly.
    if (full) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        _mm256_storeu_ps(sc + r * su + j, _mm256_mul_ps(a0[r], scale));
        _mm256_storeu_ps(sc + r * su + j + 8, _mm256_mul_ps(a1[r], scale));
      }
    } else {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        _mm256_maskstore_ps(sc + r * su + j, m0, _mm256_mul_ps(a0[r], scale));
        _mm256_maskstore_ps(sc + r * su + j + 8, m1, _mm256_mul_ps(a1[r], scale));
      }
    }
  }
}

// One head's outputs of R rows (R <= 3), C vectors of 8 components (C <= 4): out_r = chain over
// the union's keys of w_r[j] x v_j, w_r (in sc: the softmax weights, scores x inv) exactly 0
// outside the row's window (which adds a signed zero to a sum that is never -0: the chain over
// the union is the chain over the row's keys).
template <int R, int C>
void union_values(const float* sc, int64_t su, const float* vg, int64_t kvw, int64_t u0, int64_t nu,
                  float* out, int64_t qstride) {
  __m256 a[R][C];
#pragma GCC unroll 3
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      a[r][c] = _mm256_setzero_ps();
  for (int64_t j = 0; j < nu; ++j) {
    const float* vj = vg + (u0 + j) * kvw;
    __m256 vv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      vv[c] = _mm256_loadu_ps(vj + c * 8);
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) {
      const __m256 w = _mm256_broadcast_ss(sc + r * su + j);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c)
        a[r][c] = _mm256_fmadd_ps(w, vv[c], a[r][c]);
    }
  }
#pragma GCC unroll 3
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      _mm256_storeu_ps(out + r * qstride + c * 8, a[r][c]);
}

using scores_fn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);
constexpr scores_fn scores_by_rows[5] = {nullptr, union_scores<1>, union_scores<2>, union_scores<3>, union_scores<4>};

using values_fn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, int64_t, float*, int64_t);
constexpr values_fn values_by_shape[4][5] = {
    {nullptr, nullptr, nullptr, nullptr, nullptr},
    {nullptr, union_values<1, 1>, union_values<1, 2>, union_values<1, 3>, union_values<1, 4>},
    {nullptr, union_values<2, 1>, union_values<2, 2>, union_values<2, 3>, union_values<2, 4>},
    {nullptr, union_values<3, 1>, union_values<3, 2>, union_values<3, 3>, union_values<3, 4>}};

// Rows [0, rows) of a block (rows <= max_rows), every head.
void attend_block(const float* q, int64_t rows, int64_t qstride, const int64_t* first,
                  const int64_t* count, const float* kt, int64_t stride, const float* v,
                  int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  const int64_t group = heads / kv_heads, kvw = kv_heads * d, chunks = d / 8;
  const int64_t u0 = first[0], nu = first[rows - 1] + count[rows - 1] - u0;
  const int64_t su = (nu + 15) / 16 * 16;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / group;
    for (int64_t r = 0; r < rows; r += 4)
      scores_by_rows[std::min<int64_t>(4, rows - r)](q + r * qstride + h * d, qstride, kt + g * d * stride,
                                                     stride, u0, nu, d, scores + r * su, su);
    for (int64_t r = 0; r < rows; ++r) {
      // The row's softmax over its own keys, then zero weights around them.
      float* row = scores + r * su;
      const int64_t lo = first[r] - u0, n = count[r];
      // The maximum is exact in any order; only a tie of +0 and -0 could differ, and exp of
      // x - (+0) and of x - (-0) are the same bits.
      __m256 mx = _mm256_set1_ps(-INFINITY);
      int64_t j = lo;
      for (; j + 8 <= lo + n; j += 8)
        mx = _mm256_max_ps(mx, _mm256_loadu_ps(row + j));
      float top = hmax(mx);
      for (; j < lo + n; ++j)
        top = row[j] > top ? row[j] : top;
      // The weights scores x inv, each the product the chain below would form (so the same bits).
      const __m256 inv = _mm256_set1_ps(exp_shifted(row + lo, n, top));
      for (j = lo; j + 8 <= lo + n; j += 8)
        _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), inv));
      for (; j < lo + n; ++j)
        row[j] *= _mm256_cvtss_f32(inv);
      std::fill(row, row + lo, 0.0f);
      std::fill(row + lo + n, row + nu, 0.0f);
    }
    for (int64_t r = 0; r < rows; r += 3)
      for (int64_t c = 0; c < chunks; c += 4)
        values_by_shape[std::min<int64_t>(3, rows - r)][std::min<int64_t>(4, chunks - c)](
            scores + r * su, su, v + g * d + c * 8, kvw, u0, nu, out + r * qstride + h * d + c * 8, qstride);
  }
}

} // namespace

void attend_rows(const float* q, int64_t rows, int64_t qstride, const int64_t* first,
                 const int64_t* count, const float* kt, int64_t stride, const float* v,
                 int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  if (d % 8 != 0) {
    portable::attend_rows(q, rows, qstride, first, count, kt, stride, v, heads, kv_heads, d, scores, out);
    return;
  }
  for (int64_t r = 0; r < rows; r += max_rows)
    attend_block(q + r * qstride, std::min(max_rows, rows - r), qstride, first + r, count + r, kt, stride, v,
                 heads, kv_heads, d, scores, out + r * qstride);
}

void attend_gathered(const float* q, const float* const* kv, int64_t v_offset, int64_t nk,
                     int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  if (d % 16 != 0) {
    portable::attend_gathered(q, kv, v_offset, nk, heads, kv_heads, d, scores, out);
    return;
  }
  const int64_t group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    float top = -INFINITY;
    const bool first_of_group = h % group == 0; // later heads find the group's K and V in cache
    for (int64_t j = 0; j < nk; ++j) {
      if (first_of_group && j + gather_ahead < nk)
        prefetch_span(kv[j + gather_ahead] + g * d, d);
      const float* k = kv[j] + g * d;
      __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
      for (int64_t i = 0; i < d; i += 16) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i), _mm256_loadu_ps(k + i), lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(qh + i + 8), _mm256_loadu_ps(k + i + 8), hi);
      }
      scores[j] = fold16(lo, hi) * scale;
      top = scores[j] > top ? scores[j] : top;
    }
    const float inv = exp_shifted(scores, nk, top);
    weighted_values(scores, inv, nk, d / 8,
                    [&](int64_t jj) {
                      if (first_of_group && jj + gather_ahead < nk)
                        prefetch_span(kv[jj + gather_ahead] + v_offset + g * d, d);
                      return kv[jj] + v_offset + g * d;
                    },
                    out + h * d);
  }
}

} // namespace deepinfer::engine::kernels::avx2

#include "engine/kernels/target_end.hpp"
