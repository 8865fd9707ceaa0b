#include "engine/backends/cpu/cpu_backend.hpp"
#include "engine/backends/cpu/packed_gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstring>
#include <immintrin.h>
#include <vector>

// GCC 12's AVX-512 headers start many intrinsics from an "undefined" vector and then warn that it
// is uninitialized (GCC bug 105593); the warning says nothing about this file's code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::engine {

namespace {
// OpenBLAS picks a different kernel (and so a different summation order) for (a) the last rows
// of a call when m is not a multiple of its unroll and (b) calls with m*n*k <= 100^3 (its
// "small matrix" kernels, chosen by a rule that also looks at m). Padding every call to a
// multiple of 8 rows and past 100^3 / (n*k) rows makes a row's result independent of m, which
// the determinism contract needs (measured on OpenBLAS 0.3.21, Cooper Lake: unpadded calls
// differed in up to 97 % of row windows, padded in none; cpu_backend.test.cpp checks it).
constexpr int64_t row_multiple = 8;
constexpr int64_t small_path_limit = 1000000;

// Products with a very wide output (the lm_head: n = vocabulary) and few rows are one pass over
// the weights; OpenBLAS would first pack all of them (66 MB for the tiny model's 129,280 x 128
// lm_head, ~20 ms, the largest single cost of a hot prefill and of every decode step). They run
// as dot products instead, for every m, so a row's result still never depends on m.
constexpr int64_t wide_output = 32768;
constexpr int64_t wide_chunk = 4096; // output columns per parallel task

// One output: an FMA chain over k in 16-lane vectors, then a fixed tree over the lanes (lane i
// += lane i + 8, + 4, + 2, + 1).
__attribute__((target("avx512f"))) float wide_dot(const float* xr, const float* wj, int64_t k) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < k; c += 16)
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(xr + c), _mm512_loadu_ps(wj + c), acc);
  alignas(64) float lane[16];
  _mm512_store_ps(lane, acc);
  for (int half = 8; half > 0; half /= 2)
    for (int i = 0; i < half; ++i)
      lane[i] += lane[i + half];
  return lane[0];
}

// Sixteen outputs (columns j .. j + 15 of one row) at once: the same chains and the same lane
// tree, its four levels done for all sixteen accumulators together by shuffles, so every output
// has the bits `wide_dot` gives it.
__attribute__((target("avx512f"))) __m512 wide_dots16(const float* xr, const float* w, int64_t k) {
  __m512 a[16];
#pragma GCC unroll 16
  for (int c = 0; c < 16; ++c)
    a[c] = _mm512_setzero_ps();
  for (int64_t t = 0; t < k; t += 16) {
    const __m512 xv = _mm512_loadu_ps(xr + t);
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c)
      a[c] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w + c * k + t), a[c]);
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

__attribute__((target("avx512f"))) void wide_dots_avx512(const float* x, int64_t m, int64_t k,
                                                         const float* w, int64_t n, int64_t j0,
                                                         int64_t j1, float* y, bool accumulate) {
  int64_t j = j0;
  // A few rows stream the weights faster one column at a time (sixteen rows of w read in step
  // defeat the prefetcher); both ways give the same bits, so the choice may depend on m.
  if (m >= 4)
    for (; j + 16 <= j1; j += 16)
      for (int64_t r = 0; r < m; ++r) {
        const __m512 d = wide_dots16(x + r * k, w + j * k, k);
        float* out = y + r * n + j;
        _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(_mm512_loadu_ps(out), d) : d);
      }
  for (; j < j1; ++j)
    for (int64_t r = 0; r < m; ++r) {
      const float d = wide_dot(x + r * k, w + j * k, k);
      y[r * n + j] = accumulate ? y[r * n + j] + d : d;
    }
}

const bool has_avx512 = __builtin_cpu_supports("avx512f");

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

int64_t min_rows(int64_t n, int64_t k) {
  int64_t rows = small_path_limit / (n * k) + 1;
  return std::max<int64_t>(row_multiple, (rows + row_multiple - 1) / row_multiple * row_multiple);
}
} // namespace

cpu_backend::cpu_backend(const config& cfg) : config_(cfg), pool_(cfg.threads) {
  if (cfg.blas_threads > 0)
    openblas_set_num_threads(cfg.blas_threads);
}

void cpu_backend::matmul(const float* x, int64_t m, int64_t k, const float* w, int64_t n,
                         float* y, bool accumulate) {
  if (m <= 0)
    return;
  // With one OpenBLAS thread the whole product runs on this thread, so its CPU clock measures
  // it without counting other processes; otherwise the wall clock.
  const bool thread_clock = config_.blas_threads == 1;
  const double t0 = thread_clock ? thread_seconds() : wall_seconds();
  run_sgemm(x, m, k, w, n, y, accumulate);
  stats_.calls += 1;
  stats_.flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  stats_.seconds += (thread_clock ? thread_seconds() : wall_seconds()) - t0;
}

void cpu_backend::run_sgemm(const float* x, int64_t m, int64_t k, const float* w, int64_t n,
                            float* y, bool accumulate) {
  if (has_avx512 && n >= wide_output && k % 16 == 0) {
    pool_.parallel_for((n + wide_chunk - 1) / wide_chunk, [&](int64_t c) {
      wide_dots_avx512(x, m, k, w, n, c * wide_chunk, std::min(n, (c + 1) * wide_chunk), y,
                       accumulate);
    });
    return;
  }
  if (packed_gemm::handles(n, k)) {
    const float* wp = packed_.packed(w, n, k);
    // Rows in parts of whole 8-row blocks over the pool when there are enough of them; any
    // split gives the same bits.
    const int64_t parts = m >= 64 ? std::min<int64_t>(pool_.size(), m / 32) : 1;
    if (parts <= 1) {
      packed_gemm::multiply(x, k, wp, n, y, accumulate, 0, m);
      return;
    }
    const int64_t step = (m / parts + 7) / 8 * 8;
    pool_.parallel_for(parts, [&](int64_t t) {
      packed_gemm::multiply(x, k, wp, n, y, accumulate, std::min(m, t * step),
                            t + 1 == parts ? m : std::min(m, (t + 1) * step));
    });
    return;
  }
  const int64_t least = min_rows(n, k);
  const int64_t full = m >= least ? m / row_multiple * row_multiple : 0;
  const float beta = accumulate ? 1.0f : 0.0f;
  if (full > 0)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(full),
                static_cast<int>(n), static_cast<int>(k), 1.0f, x, static_cast<int>(k), w,
                static_cast<int>(k), beta, y, static_cast<int>(n));
  const int64_t rest = m - full;
  if (rest == 0)
    return;
  const int64_t padded = std::max(least, (rest + row_multiple - 1) / row_multiple * row_multiple);
  thread_local std::vector<float> xp, yp;
  xp.assign(static_cast<std::size_t>(padded * k), 0.0f);
  yp.assign(static_cast<std::size_t>(padded * n), 0.0f);
  std::memcpy(xp.data(), x + full * k, static_cast<std::size_t>(rest * k) * sizeof(float));
  if (accumulate)
    std::memcpy(yp.data(), y + full * n, static_cast<std::size_t>(rest * n) * sizeof(float));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(padded),
              static_cast<int>(n), static_cast<int>(k), 1.0f, xp.data(), static_cast<int>(k), w,
              static_cast<int>(k), beta, yp.data(), static_cast<int>(n));
  std::memcpy(y + full * n, yp.data(), static_cast<std::size_t>(rest * n) * sizeof(float));
}

void cpu_backend::prepare_weight(const float* w, int64_t n, int64_t k) {
  if (packed_gemm::handles(n, k))
    packed_.packed(w, n, k);
}

void cpu_backend::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  pool_.parallel_for(n, fn);
}

} // namespace deepinfer::engine
