#include "engine/backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

namespace deepinfer::engine {

namespace {

// Products with a very wide output (the lm_head: n = vocabulary) and few rows are one pass over
// the weights: the pool splits their columns (whole panels), not their rows. Either split gives
// the same bits: every output is its own chain.
constexpr int64_t wide_output = 32768;
constexpr int64_t wide_chunk = 4096; // output columns per parallel task, a multiple of 16

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

} // namespace

cpu_backend::cpu_backend(const config& cfg)
    : config_(cfg), kernels_(kernels::kernels_for(cfg.isa.value_or(kernels::best_cpu_isa()))),
      pool_(cfg.threads) {}

std::string cpu_backend::name() const {
  return std::string{"cpu-"} + kernels::to_string(kernels_.isa);
}

void cpu_backend::matmul(const float* x, int64_t m, int64_t k, const float* w, int64_t n,
                         float* y, bool accumulate) {
  if (m <= 0)
    return;
  const bool thread_clock = config_.threads == 1;
  const double t0 = thread_clock ? thread_seconds() : wall_seconds();
  multiply(x, m, k, w, n, y, accumulate);
  stats_.calls += 1;
  stats_.flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  stats_.seconds += (thread_clock ? thread_seconds() : wall_seconds()) - t0;
}

void cpu_backend::multiply(const float* x, int64_t m, int64_t k, const float* w, int64_t n,
                           float* y, bool accumulate) {
  const packed_panels wp = packed_.packed(w, n, k);
  if (n >= wide_output && m < 64) {
    pool_.parallel_for((n + wide_chunk - 1) / wide_chunk, [&](int64_t c) {
      const int64_t j0 = c * wide_chunk;
      wp.gemm(kernels_, x, m, k, j0, std::min(n, j0 + wide_chunk) - j0, y + j0, n, accumulate);
    });
    return;
  }
  // Rows in parts of whole 8-row blocks over the pool when there are enough of them; any split
  // gives the same bits (every output is its own chain).
  const int64_t parts = m >= 64 ? std::min<int64_t>(pool_.size(), m / 32) : 1;
  if (parts <= 1) {
    wp.gemm(kernels_, x, m, k, 0, n, y, n, accumulate);
    return;
  }
  const int64_t step = (m / parts + 7) / 8 * 8;
  pool_.parallel_for(parts, [&](int64_t t) {
    const int64_t r0 = std::min(m, t * step), r1 = t + 1 == parts ? m : std::min(m, (t + 1) * step);
    wp.gemm(kernels_, x + r0 * k, r1 - r0, k, 0, n, y + r0 * n, n, accumulate);
  });
}

void cpu_backend::prepare_weight(const float* w, int64_t n, int64_t k) {
  packed_.packed(w, n, k);
}

void cpu_backend::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  pool_.parallel_for(n, fn);
}

} // namespace deepinfer::engine
