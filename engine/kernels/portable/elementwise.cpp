// Portable norms and element-wise functions: the canonical orders themselves (canonical.hpp).
#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

namespace deepinfer::engine::kernels::portable {

float dot(const float* a, const float* b, int64_t n) {
  return canonical::dot16(a, b, n);
}

void rms_norm(const float* x, int64_t n, int64_t h, const float* w, float eps, float* out) {
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * h;
    const float inv = 1.0f / std::sqrt(canonical::dot16(xr, xr, h) / static_cast<float>(h) + eps);
    for (int64_t i = 0; i < h; ++i)
      out[r * h + i] = xr[i] * inv * w[i];
  }
}

void silu_mul(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    a[i] = a[i] / (1.0f + canonical::exp(-a[i])) * b[i];
}

void sigmoid(const float* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = canonical::sigmoid(x[i]);
}

void exp_shifted(const float* x, int64_t n, float shift, float* out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = canonical::exp(x[i] - shift);
}

void axpy(float* x, const float* y, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] += s * y[i];
}

} // namespace deepinfer::engine::kernels::portable
