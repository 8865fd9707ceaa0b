// AVX-512 matrix products in the canonical orders: a 16-wide panel is one vector.
#include <algorithm>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

// GCC 12's AVX-512 headers start many intrinsics from an "undefined" vector and then warn that it
// is uninitialized (GCC bug 105593); the warning says nothing about this file's code.
#include "engine/kernels/target_avx512.hpp"
#include "engine/kernels/avx512/vec.hpp"

namespace deepinfer::engine::kernels::avx512 {

namespace {

constexpr int64_t block_rows = 8; // 8 rows x 2 panels: 16 accumulators of the 32 registers

// R rows x P panels of outputs: R * P accumulators, each a chain over k; `cols` valid columns in
// the last panel.
template <int R, int P>
inline __attribute__((always_inline)) void tile(const float* x, int64_t k, const float* wp,
                                                int64_t ldy, float* y, int64_t cols, bool accumulate) {
  __m512 acc[R][P];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p)
      acc[r][p] = _mm512_setzero_ps();
  for (int64_t c = 0; c < k; ++c) {
    __m512 w[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p)
      w[p] = _mm512_loadu_ps(wp + (p * k + c) * panel_width);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_set1_ps(x[r * k + c]);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p)
        acc[r][p] = _mm512_fmadd_ps(xv, w[p], acc[r][p]);
    }
  }
  const __mmask16 last = lane_mask(cols);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      float* out = y + r * ldy + p * panel_width;
      const __mmask16 m = p + 1 == P ? last : __mmask16{0xFFFF};
      const __m512 v = accumulate ? _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), acc[r][p]) : acc[r][p];
      _mm512_mask_storeu_ps(out, m, v);
    }
}

template <int R>
void rows_of(const float* x, int64_t k, const float* wp, int64_t n, int64_t ldy, float* y, bool accumulate) {
  const int64_t panels = (n + panel_width - 1) / panel_width;
  const int64_t last_cols = n - (panels - 1) * panel_width;
  int64_t p = 0;
  // Up to four rows: four panels at a time, so enough independent chains hide the FMA latency
  // (16 accumulators at most).
  if constexpr (R <= 4)
    for (; p + 4 <= panels; p += 4)
      tile<R, 4>(x, k, wp + p * k * panel_width, ldy, y + p * panel_width,
                 p + 4 == panels ? last_cols : panel_width, accumulate);
  for (; p + 2 <= panels; p += 2)
    tile<R, 2>(x, k, wp + p * k * panel_width, ldy, y + p * panel_width,
               p + 2 == panels ? last_cols : panel_width, accumulate);
  if (p < panels)
    tile<R, 1>(x, k, wp + p * k * panel_width, ldy, y + p * panel_width, last_cols, accumulate);
}

using rows_fn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, bool);
constexpr rows_fn by_rows[block_rows + 1] = {nullptr,    rows_of<1>, rows_of<2>, rows_of<3>, rows_of<4>,
                                             rows_of<5>, rows_of<6>, rows_of<7>, rows_of<8>};

} // namespace

void gemm_packed(const float* x, int64_t rows, int64_t k, const float* wp, int64_t n, float* y,
                 int64_t ldy, bool accumulate) {
  // A few rows against weights larger than the L2 cache (the lm_head of a decode step) stream
  // them from memory: AVX2's one-panel-at-a-time kernel streams faster (measured on a Zen 4
  // lm_head: 2.7 vs 3.6 ms for one row, 4.6 vs 6.0 ms for eight), with the same bits.
  if (rows <= 8 && n * k * static_cast<int64_t>(sizeof(float)) > streamed_weight_bytes) {
    avx2::gemm_packed(x, rows, k, wp, n, y, ldy, accumulate);
    return;
  }
  // Columns in groups of whole panels that stay in the L2 cache while every row block passes over
  // them (a wide product, the lm_head, would otherwise stream its weights from memory once per
  // row block). An even group size keeps the panel pairs of `rows_of`.
  const int64_t group = std::max<int64_t>(2, (256 << 10) / (k * panel_width * 4) / 2 * 2) * panel_width;
  for (int64_t j0 = 0; j0 < n; j0 += group) {
    const int64_t cols = std::min(group, n - j0);
    for (int64_t r = 0; r < rows; r += block_rows)
      by_rows[std::min(block_rows, rows - r)](x + r * k, k, wp + j0 * k, cols, ldy, y + r * ldy + j0, accumulate);
  }
}

} // namespace deepinfer::engine::kernels::avx512

#include "engine/kernels/target_end.hpp"
