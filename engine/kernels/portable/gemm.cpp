// Portable matrix products: the canonical orders themselves (canonical.hpp).
#include <algorithm>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

namespace deepinfer::engine::kernels::portable {

void gemm_packed(const float* x, int64_t rows, int64_t k, const float* wp, int64_t n, float* y,
                 bool accumulate) {
  constexpr int64_t pw = panel_width;
  const int64_t panels = (n + pw - 1) / pw;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < panels; ++p) {
      float acc[pw] = {};
      const float* w = wp + p * k * pw;
      for (int64_t c = 0; c < k; ++c) {
        const float xv = x[r * k + c];
        for (int64_t l = 0; l < pw; ++l)
          acc[l] = std::fma(xv, w[c * pw + l], acc[l]);
      }
      float* out = y + r * n + p * pw;
      for (int64_t l = 0; l < std::min(pw, n - p * pw); ++l)
        out[l] = accumulate ? out[l] + acc[l] : acc[l];
    }
}

void gemm_dots(const float* x, int64_t m, int64_t k, const float* w, int64_t n, int64_t j0,
               int64_t j1, float* y, bool accumulate) {
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t r = 0; r < m; ++r) {
      const float d = canonical::dot16(x + r * k, w + j * k, k);
      y[r * n + j] = accumulate ? y[r * n + j] + d : d;
    }
}

} // namespace deepinfer::engine::kernels::portable
