// AVX-512 attention in the canonical orders, for heads of width 32 (two vectors); other widths
// run the AVX2 kernels (the same bits).
#include <algorithm>
#include <cmath>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "engine/kernels/target_avx512.hpp"
#include "engine/kernels/avx512/vec.hpp"

namespace deepinfer::engine::kernels::avx512 {

// 16 keys' scores per vector (a chain over the 32 components, masked loads past nk), the values
// accumulated in two registers.
void attend(const float* q, const float* kt, int64_t stride, const float* v, int64_t nk,
            int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  if (d != 32) {
    avx2::attend(q, kt, stride, v, nk, heads, kv_heads, d, scores, out);
    return;
  }
  const int64_t group = heads / kv_heads, kvw = kv_heads * d;
  const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(static_cast<float>(d)));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    const float* kg = kt + g * d * stride;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < nk; j += 16) {
      const __mmask16 m = lane_mask(nk - j);
      __m512 acc = _mm512_setzero_ps();
      for (int64_t i = 0; i < d; ++i)
        acc = _mm512_fmadd_ps(_mm512_set1_ps(qh[i]), _mm512_maskz_loadu_ps(m, kg + i * stride + j), acc);
      acc = _mm512_mul_ps(acc, scale);
      _mm512_mask_storeu_ps(scores + j, m, acc);
      mx = _mm512_mask_max_ps(mx, m, mx, acc);
    }
    const float inv = exp_shifted(scores, nk, hmax(mx));
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int64_t j = 0; j < nk; ++j) {
      const float* vj = v + j * kvw + g * d;
      const __m512 wj = _mm512_set1_ps(scores[j] * inv);
      a0 = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vj), a0);
      a1 = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vj + 16), a1);
    }
    _mm512_storeu_ps(out + h * d, a0);
    _mm512_storeu_ps(out + h * d + 16, a1);
  }
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
