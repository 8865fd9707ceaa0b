// AVX2 norms and element-wise functions in the canonical orders (tails run the canonical scalar
// code, which computes the same operations).
#include <algorithm>
#include <cmath>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

#include "engine/kernels/target_avx2.hpp"
#include "engine/kernels/avx2/vec.hpp"

namespace deepinfer::engine::kernels::avx2 {

float dot(const float* a, const float* b, int64_t n) {
  return dot16(a, b, n);
}

void rms_norm(const float* x, int64_t n, int64_t h, const float* w, float eps, float* out) {
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * h;
    float* o = out + r * h;
    const float inv = 1.0f / std::sqrt(dot16(xr, xr, h) / static_cast<float>(h) + eps);
    const __m256 iv = _mm256_set1_ps(inv);
    int64_t i = 0;
    for (; i + 8 <= h; i += 8)
      _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), iv), _mm256_loadu_ps(w + i)));
    for (; i < h; ++i)
      o[i] = xr[i] * inv * w[i];
  }
}

void silu_mul(float* a, const float* b, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(a + i);
    const __m256 s = _mm256_div_ps(v, _mm256_add_ps(one, exp8(_mm256_xor_ps(v, sign))));
    _mm256_storeu_ps(a + i, _mm256_mul_ps(s, _mm256_loadu_ps(b + i)));
  }
  for (; i < n; ++i)
    a[i] = a[i] / (1.0f + canonical::exp(-a[i])) * b[i];
}

void sigmoid(const float* x, int64_t n, float* out) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_xor_ps(_mm256_loadu_ps(x + i), sign)))));
  for (; i < n; ++i)
    out[i] = canonical::sigmoid(x[i]);
}

void exp_shifted(const float* x, int64_t n, float shift, float* out) {
  const __m256 s = _mm256_set1_ps(shift);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
  for (; i < n; ++i)
    out[i] = canonical::exp(x[i] - shift);
}

void axpy(float* x, const float* y, float s, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_mul_ps(sv, _mm256_loadu_ps(y + i))));
  for (; i < n; ++i)
    x[i] += s * y[i];
}

} // namespace deepinfer::engine::kernels::avx2

#include "engine/kernels/target_end.hpp"
