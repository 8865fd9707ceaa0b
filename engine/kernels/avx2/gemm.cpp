// AVX2 matrix products in the canonical orders: a 16-wide panel is two 8-lane vectors.
#include <algorithm>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

#include "engine/kernels/target_avx2.hpp"
#include "engine/kernels/avx2/vec.hpp"

namespace deepinfer::engine::kernels::avx2 {

namespace {

constexpr int64_t block_rows = 6; // 6 rows x 2 vectors: 12 accumulators of the 16 registers

// Stores one row's 16 outputs (the first `cols` of them) of a panel.
inline void store_panel(float* out, __m256 a0, __m256 a1, int64_t cols, bool accumulate) {
  if (cols == panel_width) {
    if (accumulate) {
      a0 = _mm256_add_ps(_mm256_loadu_ps(out), a0);
      a1 = _mm256_add_ps(_mm256_loadu_ps(out + 8), a1);
    }
    _mm256_storeu_ps(out, a0);
    _mm256_storeu_ps(out + 8, a1);
    return;
  }
  const __m256i m0 = lane_mask(std::min<int64_t>(8, cols));
  const __m256i m1 = lane_mask(std::max<int64_t>(0, cols - 8));
  if (accumulate) {
    a0 = _mm256_add_ps(_mm256_maskload_ps(out, m0), a0);
    a1 = _mm256_add_ps(_mm256_maskload_ps(out + 8, m1), a1);
  }
  _mm256_maskstore_ps(out, m0, a0);
  _mm256_maskstore_ps(out + 8, m1, a1);
}

// One row of a panel (16 weights) as two 8-lane vectors, from f32 panels or from bf16 panels
// (a bf16 value is the top half of its f32: widening is exact, so both give the same products).
inline void load_panel_row(const float* w, __m256& w0, __m256& w1) {
  w0 = _mm256_loadu_ps(w);
  w1 = _mm256_loadu_ps(w + 8);
}
inline void load_panel_row(const uint16_t* w, __m256& w0, __m256& w1) {
  const __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
  w0 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(halves)), 16));
  w1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(halves, 1)), 16));
}

// R rows against one panel: 2R accumulators, each a chain over k.
template <int R, typename W>
void panel_rows(const float* x, int64_t k, const W* wp, float* y, int64_t n, int64_t cols,
                bool accumulate) {
  __m256 a0[R], a1[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    a0[r] = a1[r] = _mm256_setzero_ps();
  for (int64_t c = 0; c < k; ++c) {
    __m256 w0, w1;
    load_panel_row(wp + c * panel_width, w0, w1);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_broadcast_ss(x + r * k + c);
      a0[r] = _mm256_fmadd_ps(xv, w0, a0[r]);
      a1[r] = _mm256_fmadd_ps(xv, w1, a1[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    store_panel(y + r * n, a0[r], a1[r], cols, accumulate);
}

template <typename W>
using panel_fn = void (*)(const float*, int64_t, const W*, float*, int64_t, int64_t, bool);
template <typename W>
constexpr panel_fn<W> by_rows[block_rows + 1] = {nullptr,          panel_rows<1, W>, panel_rows<2, W>,
                                                 panel_rows<3, W>, panel_rows<4, W>, panel_rows<5, W>,
                                                 panel_rows<6, W>};

template <typename W>
void gemm_panels(const float* x, int64_t rows, int64_t k, const W* wp, int64_t n, float* y, int64_t ldy,
                 bool accumulate) {
  const int64_t panels = (n + panel_width - 1) / panel_width;
  // Panels in groups that stay in the L2 cache while every row block passes over them (a wide
  // product, the lm_head, would otherwise stream its weights from memory once per row block).
  const int64_t group = std::max<int64_t>(1, (256 << 10) / (k * panel_width * int64_t{sizeof(W)}));
  for (int64_t p0 = 0; p0 < panels; p0 += group)
    for (int64_t r = 0; r < rows; r += block_rows) {
      const auto fn = by_rows<W>[std::min(block_rows, rows - r)];
      for (int64_t p = p0; p < std::min(panels, p0 + group); ++p)
        fn(x + r * k, k, wp + p * k * panel_width, y + r * ldy + p * panel_width, ldy,
           std::min(panel_width, n - p * panel_width), accumulate);
    }
}

} // namespace

DEEPINFER_DEFINE_GEMM_PACKED(gemm_panels)

} // namespace deepinfer::engine::kernels::avx2

#include "engine/kernels/target_end.hpp"
