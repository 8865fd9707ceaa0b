// AVX-512 matrix products in the canonical orders: a 16-wide panel is one vector.
#include <algorithm>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

// GCC 12's AVX-512 headers start many intrinsics from an "undefined" vector and then warn that it
// is uninitialized (GCC bug 105593); the warning says nothing about this file's code.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "engine/kernels/target_avx512.hpp"
#include "engine/kernels/avx512/vec.hpp"

namespace deepinfer::engine::kernels::avx512 {

namespace {

constexpr int64_t block_rows = 8; // 8 rows x 2 panels: 16 accumulators of the 32 registers

// R rows x P panels of outputs: R * P accumulators, each a chain over k; `cols` valid columns in
// the last panel.
template <int R, int P>
inline __attribute__((always_inline)) void tile(const float* x, int64_t k, const float* wp,
                                                int64_t n, float* y, int64_t cols, bool accumulate) {
  __m512 acc[R][P];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p)
      acc[r][p] = _mm512_setzero_ps();
  for (int64_t c = 0; c < k; ++c) {
    __m512 w[P];
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p)
      w[p] = _mm512_loadu_ps(wp + (p * k + c) * panel_width);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_set1_ps(x[r * k + c]);
#pragma GCC unroll 2
      for (int p = 0; p < P; ++p)
        acc[r][p] = _mm512_fmadd_ps(xv, w[p], acc[r][p]);
    }
  }
  const __mmask16 last = lane_mask(cols);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p) {
      float* out = y + r * n + p * panel_width;
      const __mmask16 m = p + 1 == P ? last : __mmask16{0xFFFF};
      const __m512 v = accumulate ? _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), acc[r][p]) : acc[r][p];
      _mm512_mask_storeu_ps(out, m, v);
    }
}

template <int R>
void rows_of(const float* x, int64_t k, const float* wp, int64_t n, float* y, bool accumulate) {
  const int64_t panels = (n + panel_width - 1) / panel_width;
  const int64_t last_cols = n - (panels - 1) * panel_width;
  int64_t p = 0;
  for (; p + 2 <= panels; p += 2)
    tile<R, 2>(x, k, wp + p * k * panel_width, n, y + p * panel_width,
               p + 2 == panels ? last_cols : panel_width, accumulate);
  if (p < panels)
    tile<R, 1>(x, k, wp + p * k * panel_width, n, y + p * panel_width, last_cols, accumulate);
}

using rows_fn = void (*)(const float*, int64_t, const float*, int64_t, float*, bool);
constexpr rows_fn by_rows[block_rows + 1] = {nullptr,    rows_of<1>, rows_of<2>, rows_of<3>, rows_of<4>,
                                             rows_of<5>, rows_of<6>, rows_of<7>, rows_of<8>};

// One output: 16 chains over k (the last partial 16 read as zeros), then fold16.
inline float dot_one(const float* xr, const float* wj, int64_t k) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < k; c += 16) {
    const __mmask16 m = lane_mask(k - c);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, xr + c), _mm512_maskz_loadu_ps(m, wj + c), acc);
  }
  return fold16(acc);
}

// Sixteen outputs (columns j .. j + 15 of one row) at once: the same chains, and fold16's four
// levels done for all sixteen accumulators together by shuffles, so every output has the bits
// `dot_one` gives it.
inline __m512 dots16(const float* xr, const float* w, int64_t k) {
  __m512 a[16];
#pragma GCC unroll 16
  for (int c = 0; c < 16; ++c)
    a[c] = _mm512_setzero_ps();
  for (int64_t t = 0; t < k; t += 16) {
    const __mmask16 m = lane_mask(k - t);
    const __m512 xv = _mm512_maskz_loadu_ps(m, xr + t);
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c)
      a[c] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m, w + c * k + t), a[c]);
  }
  // lane i + lane i + 8: 128-bit blocks (0, 1) + (2, 3) of two accumulators at once.
  __m512 s8[8];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p)
    s8[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], 0x44),
                          _mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], 0xEE));
  // + 4: blocks (0, 2) + (1, 3); four accumulators per vector, one block each.
  __m512 s4[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q)
    s4[q] = _mm512_add_ps(_mm512_shuffle_f32x4(s8[2 * q], s8[2 * q + 1], 0x88),
                          _mm512_shuffle_f32x4(s8[2 * q], s8[2 * q + 1], 0xDD));
  // + 2 and + 1 within each 128-bit block.
  __m512 s2[2];
#pragma GCC unroll 2
  for (int u = 0; u < 2; ++u)
    s2[u] = _mm512_add_ps(_mm512_shuffle_ps(s4[2 * u], s4[2 * u + 1], 0x44),
                          _mm512_shuffle_ps(s4[2 * u], s4[2 * u + 1], 0xEE));
  const __m512 s1 = _mm512_add_ps(_mm512_shuffle_ps(s2[0], s2[1], 0x88),
                                  _mm512_shuffle_ps(s2[0], s2[1], 0xDD));
  // Lane 4 * b + t of s1 holds column 4 * t + b.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, s1);
}

} // namespace

void gemm_packed(const float* x, int64_t rows, int64_t k, const float* wp, int64_t n, float* y,
                 bool accumulate) {
  for (int64_t r = 0; r < rows; r += block_rows)
    by_rows[std::min(block_rows, rows - r)](x + r * k, k, wp, n, y + r * n, accumulate);
}

void gemm_dots(const float* x, int64_t m, int64_t k, const float* w, int64_t n, int64_t j0,
               int64_t j1, float* y, bool accumulate) {
  int64_t j = j0;
  // A few rows stream the weights faster one column at a time (sixteen rows of w read in step
  // defeat the prefetcher); both ways give the same bits, so the choice may depend on m.
  if (m >= 4)
    for (; j + 16 <= j1; j += 16)
      for (int64_t r = 0; r < m; ++r) {
        const __m512 d = dots16(x + r * k, w + j * k, k);
        float* out = y + r * n + j;
        _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), d) : d);
      }
  for (; j < j1; ++j)
    for (int64_t r = 0; r < m; ++r) {
      const float d = dot_one(x + r * k, w + j * k, k);
      y[r * n + j] = accumulate ? y[r * n + j] + d : d;
    }
}

} // namespace deepinfer::engine::kernels::avx512

#include "engine/kernels/target_end.hpp"
