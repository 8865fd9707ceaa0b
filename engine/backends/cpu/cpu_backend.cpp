#include "engine/backends/cpu/cpu_backend.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstring>
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

void cpu_backend::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  pool_.parallel_for(n, fn);
}

} // namespace deepinfer::engine
