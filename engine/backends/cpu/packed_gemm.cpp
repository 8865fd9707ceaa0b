#include "engine/backends/cpu/packed_gemm.hpp"

#include <algorithm>
#include <immintrin.h>

// GCC 12's AVX-512 headers start many intrinsics from an "undefined" vector and then warn that it
// is uninitialized (GCC bug 105593); the warning says nothing about this file's code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::engine {

namespace {

constexpr int64_t panel = 16; // output columns per packed panel (one vector)
constexpr int64_t block_rows = 8;

const bool has_avx512 = __builtin_cpu_supports("avx512f");

// R rows x P panels of outputs: R * P accumulators, each an FMA chain over k in order.
template <int R, int P>
__attribute__((target("avx512f"), always_inline)) inline void tile(const float* x, int64_t k,
                                                                    const float* wp, int64_t n,
                                                                    float* y, bool accumulate) {
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
      w[p] = _mm512_loadu_ps(wp + (p * k + c) * panel);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_set1_ps(x[r * k + c]);
#pragma GCC unroll 2
      for (int p = 0; p < P; ++p)
        acc[r][p] = _mm512_fmadd_ps(xv, w[p], acc[r][p]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p) {
      float* out = y + r * n + p * panel;
      _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), acc[r][p]) : acc[r][p]);
    }
}

template <int R>
__attribute__((target("avx512f"))) void rows(const float* x, int64_t k, const float* wp,
                                             int64_t n, float* y, bool accumulate) {
  const int64_t panels = n / panel;
  int64_t p = 0;
  for (; p + 2 <= panels; p += 2)
    tile<R, 2>(x, k, wp + p * k * panel, n, y + p * panel, accumulate);
  if (p < panels)
    tile<R, 1>(x, k, wp + p * k * panel, n, y + p * panel, accumulate);
}

using rows_fn = void (*)(const float*, int64_t, const float*, int64_t, float*, bool);
constexpr rows_fn by_count[block_rows + 1] = {nullptr,  rows<1>, rows<2>, rows<3>, rows<4>,
                                              rows<5>, rows<6>, rows<7>, rows<8>};

} // namespace

bool packed_gemm::handles(int64_t n, int64_t k) {
  return has_avx512 && n % panel == 0 && n > 0 && k > 0;
}

const float* packed_gemm::packed(const float* w, int64_t n, int64_t k) {
  std::lock_guard guard{mtx_};
  auto& p = packed_[key{w, n, k}];
  if (p.empty()) {
    p.resize(static_cast<std::size_t>(n * k));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < k; ++c)
        p[static_cast<std::size_t>(((j / panel) * k + c) * panel + j % panel)] = w[j * k + c];
  }
  return p.data();
}

void packed_gemm::multiply(const float* x, int64_t k, const float* wp, int64_t n, float* y,
                           bool accumulate, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; r += block_rows) {
    const int64_t count = std::min(block_rows, row_end - r);
    by_count[count](x + r * k, k, wp, n, y + r * n, accumulate);
  }
}

} // namespace deepinfer::engine
