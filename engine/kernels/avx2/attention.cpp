// AVX2 attention in the canonical orders: scores of 8 keys per vector (chains over the head's
// components), values 8 components per vector (chains over the keys). Shapes the vectors do not
// cover (head widths not a multiple of 8 / 16) run the portable kernel: the same bits, slower.
#include <algorithm>
#include <cmath>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

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

void attend(const float* q, const float* kt, int64_t stride, const float* v, int64_t nk,
            int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  if (d % 8 != 0) {
    portable::attend(q, kt, stride, v, nk, heads, kv_heads, d, scores, out);
    return;
  }
  const int64_t group = heads / kv_heads, kvw = kv_heads * d;
  const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(static_cast<float>(d)));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    const float* kg = kt + g * d * stride;
    __m256 mx = _mm256_set1_ps(-INFINITY);
    int64_t j = 0;
    for (; j + 8 <= nk; j += 8) {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t i = 0; i < d; ++i)
        acc = _mm256_fmadd_ps(_mm256_set1_ps(qh[i]), _mm256_loadu_ps(kg + i * stride + j), acc);
      acc = _mm256_mul_ps(acc, scale);
      _mm256_storeu_ps(scores + j, acc);
      mx = _mm256_max_ps(mx, acc);
    }
    if (j < nk) {
      const __m256i m = lane_mask(nk - j);
      __m256 acc = _mm256_setzero_ps();
      for (int64_t i = 0; i < d; ++i)
        acc = _mm256_fmadd_ps(_mm256_set1_ps(qh[i]), _mm256_maskload_ps(kg + i * stride + j, m), acc);
      acc = _mm256_mul_ps(acc, scale);
      _mm256_maskstore_ps(scores + j, m, acc);
      mx = _mm256_max_ps(mx, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), acc, _mm256_castsi256_ps(m)));
    }
    const float inv = exp_shifted(scores, nk, hmax(mx));
    weighted_values(scores, inv, nk, d / 8, [&](int64_t jj) { return v + jj * kvw + g * d; },
                    out + h * d);
  }
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
    for (int64_t j = 0; j < nk; ++j) {
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
    weighted_values(scores, inv, nk, d / 8, [&](int64_t jj) { return kv[jj] + v_offset + g * d; },
                    out + h * d);
  }
}

} // namespace deepinfer::engine::kernels::avx2

#include "engine/kernels/target_end.hpp"
