// AVX2 building blocks of the canonical orders. Include it right after target_avx2.hpp, with
// <algorithm>, <immintrin.h> and canonical.hpp included before the region (a header first included
// inside it would compile its inline functions for AVX2). Every function has internal linkage, so
// its AVX2 code stays in the file that includes it.
#pragma once

namespace deepinfer::engine::kernels::avx2 {
namespace {

/// fold16 of 16 lanes held as lo (lanes 0-7) and hi (lanes 8-15).
inline float fold16(__m256 lo, __m256 hi) {
  const __m256 t8 = _mm256_add_ps(lo, hi);                                                 // + 8
  const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1)); // + 4
  const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));                                 // + 2
  return _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));                               // + 1
}

/// Largest of 8 lanes (order-free but for the sign of a zero, which no caller can see).
inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

/// Lanes [0, count) set, count in [0, 8].
inline __m256i lane_mask(int64_t count) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), idx);
}

/// canonical::exp on 8 lanes.
inline __m256 exp8(__m256 x) {
  const __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(canonical::exp_min), _CMP_LT_OQ);
  x = _mm256_min_ps(x, _mm256_set1_ps(canonical::exp_max));
  x = _mm256_max_ps(x, _mm256_set1_ps(canonical::exp_min)); // lanes below are zeroed at the end
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(under, _mm256_mul_ps(y, _mm256_castsi256_ps(e)));
}

/// dot16 of a[0..n) and b[0..n) (any n: the last partial 16 read through masks as zeros).
inline float dot16(const float* a, const float* b, int64_t n) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), hi);
  }
  if (i < n) {
    const __m256i m0 = lane_mask(std::min<int64_t>(8, n - i));
    const __m256i m1 = lane_mask(std::max<int64_t>(0, n - i - 8));
    lo = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m0), _mm256_maskload_ps(b + i, m0), lo);
    hi = _mm256_fmadd_ps(_mm256_maskload_ps(a + i + 8, m1), _mm256_maskload_ps(b + i + 8, m1), hi);
  }
  return fold16(lo, hi);
}

/// scores[j] = exp(scores[j] - top) for j < nk; returns 1 / their sum16.
inline float exp_shifted(float* scores, int64_t nk, float top) {
  const __m256 t = _mm256_set1_ps(top);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= nk; j += 16) {
    const __m256 e0 = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), t));
    const __m256 e1 = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j + 8), t));
    _mm256_storeu_ps(scores + j, e0);
    _mm256_storeu_ps(scores + j + 8, e1);
    lo = _mm256_add_ps(lo, e0);
    hi = _mm256_add_ps(hi, e1);
  }
  if (j < nk) {
    // Lanes past nk add +0, as the padded canonical sum does.
    const __m256i m0 = lane_mask(std::min<int64_t>(8, nk - j));
    const __m256i m1 = lane_mask(std::max<int64_t>(0, nk - j - 8));
    const __m256 e0 = _mm256_and_ps(_mm256_castsi256_ps(m0), exp8(_mm256_sub_ps(_mm256_maskload_ps(scores + j, m0), t)));
    const __m256 e1 = _mm256_and_ps(_mm256_castsi256_ps(m1), exp8(_mm256_sub_ps(_mm256_maskload_ps(scores + j + 8, m1), t)));
    _mm256_maskstore_ps(scores + j, m0, e0);
    _mm256_maskstore_ps(scores + j + 8, m1, e1);
    lo = _mm256_add_ps(lo, e0);
    hi = _mm256_add_ps(hi, e1);
  }
  return 1.0f / fold16(lo, hi);
}

} // namespace
} // namespace deepinfer::engine::kernels::avx2
