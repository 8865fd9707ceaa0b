// AVX-512 building blocks of the canonical orders. Include it right after target_avx512.hpp, with
// <algorithm>, <immintrin.h> and canonical.hpp included before the region (see avx2/vec.hpp).
// Every function has internal linkage.
#pragma once

namespace deepinfer::engine::kernels::avx512 {
namespace {

/// fold16 of one vector's 16 lanes, written out (the compilers' reduce intrinsics promise no order).
inline float fold16(__m512 v) {
  const __m256 t8 = _mm256_add_ps(_mm512_castps512_ps256(v),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))); // + 8
  const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));          // + 4
  const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));                                          // + 2
  return _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));                                        // + 1
}

/// Largest of 16 lanes (order-free but for the sign of a zero, which no caller can see).
inline float hmax(__m512 v) {
  const __m256 t8 = _mm256_max_ps(_mm512_castps512_ps256(v),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

/// Lanes [0, count) set (none for count <= 0, all for count >= 16).
inline __mmask16 lane_mask(int64_t count) {
  return count >= 16 ? __mmask16{0xFFFF} : count <= 0 ? __mmask16{0} : static_cast<__mmask16>((1u << count) - 1);
}

/// canonical::exp on 16 lanes.
inline __m512 exp16(__m512 x) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(canonical::exp_min), _CMP_NLT_UQ);
  x = _mm512_min_ps(x, _mm512_set1_ps(canonical::exp_max));
  x = _mm512_max_ps(x, _mm512_set1_ps(canonical::exp_min)); // lanes below are zeroed at the end
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(keep, y, _mm512_castsi512_ps(e));
}

/// scores[j] = exp(scores[j] - top) for j < nk; returns 1 / their sum16 (lane l sums j = l mod 16).
inline float exp_shifted(float* scores, int64_t nk, float top) {
  const __m512 t = _mm512_set1_ps(top);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < nk; j += 16) {
    const __mmask16 m = lane_mask(nk - j);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, scores + j), t)));
    _mm512_mask_storeu_ps(scores + j, m, e);
    sum = _mm512_add_ps(sum, e); // lanes past nk add +0, as the padded canonical sum does
  }
  return 1.0f / fold16(sum);
}

} // namespace
} // namespace deepinfer::engine::kernels::avx512
