#pragma once

#include <memory>
#include <optional>

#include "engine/backends/backend.hpp"
#include "engine/backends/cpu/packed_gemm.hpp"
#include "engine/backends/cpu/thread_pool.hpp"
#include "engine/kernels/isa.hpp"

namespace deepinfer::engine {

/// The CPU backend: matrix products by the kernels of one ISA over weights repacked into panels
/// at load (`packed_gemm`, the lm_head too: its packed copy costs vocab x hidden floats per
/// rank, half that for a bf16 checkpoint, and makes a batched decode step's lm_head a GEMM
/// instead of dot products), and a small thread pool for the rest (attention rows, expert
/// groups). Every ISA gives the same bits, and a row's result never depends on its batch.
class cpu_backend final : public backend {
public:
  /// Settings of the CPU backend.
  struct config {
    /// Threads of the pool, counting the caller. With 1, matmul stats are timed with the
    /// calling thread's CPU clock (the whole product runs on it).
    int threads = 2;
    /// Kernels to run; nullopt: the best this CPU runs (cpuid). Precondition: supported.
    std::optional<kernels::cpu_isa> isa;
  };

  explicit cpu_backend(const config& cfg);
  std::string name() const override;
  const kernels::kernel_table& kernels() const override { return kernels_; }
  void matmul(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y,
              bool accumulate) override;
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) override;
  void prepare_weight(const float* w, int64_t n, int64_t k) override;
  void release_weight(const float* w, int64_t n, int64_t k) override { packed_.release(w, n, k); }
  std::size_t prepared_weight_bytes() const override { return packed_.bytes(); }
  int workers() const override { return pool_.size(); }
  int worker_index() const override { return thread_pool::current_index(); }
  matmul_stats stats() const override { return stats_; }

private:
  void multiply(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y,
                bool accumulate);
  config config_;
  const kernels::kernel_table& kernels_;
  thread_pool pool_;
  packed_gemm packed_;
  matmul_stats stats_;
};

} // namespace deepinfer::engine
