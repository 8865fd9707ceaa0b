#pragma once

#include <memory>

#include "engine/backends/backend.hpp"
#include "engine/backends/cpu/packed_gemm.hpp"
#include "engine/backends/cpu/thread_pool.hpp"

namespace deepinfer::engine {

/// The CPU backend: matrix products by an AVX-512 kernel over repacked weights (`packed_gemm`)
/// where the CPU and shape allow, else OpenBLAS `cblas_sgemm` (padded so rows stay independent),
/// and a small thread pool for the rest (attention rows, expert groups).
class cpu_backend final : public backend {
public:
  /// Settings of the CPU backend.
  struct config {
    /// Threads of the pool, counting the caller.
    int threads = 2;
    /// OpenBLAS threads (process-wide); 0 leaves OpenBLAS's own default. With 1, matmul stats
    /// are timed with the calling thread's CPU clock.
    int blas_threads = 0;
  };

  explicit cpu_backend(const config& cfg);
  std::string name() const override { return "cpu-openblas"; }
  void matmul(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y,
              bool accumulate) override;
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) override;
  void prepare_weight(const float* w, int64_t n, int64_t k) override;
  int workers() const override { return pool_.size(); }
  int worker_index() const override { return thread_pool::current_index(); }
  matmul_stats stats() const override { return stats_; }

private:
  void run_sgemm(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y,
                 bool accumulate);
  config config_;
  thread_pool pool_;
  packed_gemm packed_;
  matmul_stats stats_;
};

} // namespace deepinfer::engine
