#include "engine/backends/cpu/cpu_backend.hpp"
#include "engine/backends/cpu/packed_gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstring>
#include <immintrin.h>
#include <vector>

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

__attribute__((target("avx512f"))) void wide_dots_avx512(const float* x, int64_t m, int64_t k,
                                                         const float* w, int64_t n, int64_t j0,
                                                         int64_t j1, float* y, bool accumulate) {
  for (int64_t j = j0; j < j1; ++j) {
    const float* wj = w + j * k;
    for (int64_t r = 0; r < m; ++r) {
      const float* xr = x + r * k;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t c = 0; c < k; c += 16)
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(xr + c), _mm512_loadu_ps(wj + c), acc);
      alignas(64) float lane[16];
      _mm512_store_ps(lane, acc);
      for (int half = 8; half > 0; half /= 2) // a fixed reduction tree
        for (int i = 0; i < half; ++i)
          lane[i] += lane[i + half];
      const float d = lane[0];
      y[r * n + j] = accumulate ? y[r * n + j] + d : d;
    }
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
