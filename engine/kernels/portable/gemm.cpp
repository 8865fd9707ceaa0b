// Portable matrix products: the canonical orders themselves (canonical.hpp).
#include <algorithm>
#include <cmath>

#include "engine/kernels/kernel_functions.hpp"

namespace deepinfer::engine::kernels::portable {

namespace {

inline float widen(float w) { return w; }
inline float widen(uint16_t w) { return bf16_value(w); }

template <typename W>
void gemm_panels(const float* x, int64_t rows, int64_t k, const W* wp, int64_t n, float* y, int64_t ldy,
                 bool accumulate) {
  constexpr int64_t pw = panel_width;
  const int64_t panels = (n + pw - 1) / pw;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < panels; ++p) {
      float acc[pw] = {};
      const W* w = wp + p * k * pw;
      for (int64_t c = 0; c < k; ++c) {
        const float xv = x[r * k + c];
        for (int64_t l = 0; l < pw; ++l)
          acc[l] = std::fma(xv, widen(w[c * pw + l]), acc[l]);
      }
      float* out = y + r * ldy + p * pw;
      for (int64_t l = 0; l < std::min(pw, n - p * pw); ++l)
        out[l] = accumulate ? out[l] + acc[l] : acc[l];
    }
}

} // namespace

DEEPINFER_DEFINE_GEMM_PACKED(gemm_panels)

} // namespace deepinfer::engine::kernels::portable
