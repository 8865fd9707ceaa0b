#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "engine/kernels/kernel_table.hpp"

namespace deepinfer::engine {

/// The compute primitives the `ced_moe` forward runs on. The forward keeps every activation in
/// host-addressable f32 buffers and calls these for the heavy work; a CUDA backend implements the
/// same methods over device memory with unified addressing.
///
/// Determinism contract (what the exactness tests rely on): a row's result may depend only on
/// that row and the weights, never on how many other rows are in the call, on the thread count
/// or on the CPU's ISA (every reduction has the order of engine/kernels/canonical.hpp). Chunked
/// prefill, batched decode, recompute-from-scratch and a rerouted request are then bit-identical.
class backend {
public:
  virtual ~backend() = default;

  /// **required** — a short name for logs ("cpu-avx512").
  virtual std::string name() const = 0;

  /// **required** — the kernels the forward runs on its host buffers (norms, attention, the
  /// indexer, top-k); all ISAs give the same bits.
  virtual const kernels::kernel_table& kernels() const = 0;

  /// **required** — `y[m x n] = x[m x k] * w[n x k]^T`, or `y += ...` when `accumulate`. Row-major,
  /// rows contiguous (leading dimensions k, k, n). `w` is a weight: a backend may keep a repacked
  /// copy keyed by its address and shape, so it must stay valid and unchanged while the backend
  /// lives.
  virtual void matmul(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y,
                      bool accumulate = false) = 0;

  /// **optional** (default: a serial loop) — runs `fn(i)` for every i in [0, n), possibly in
  /// parallel; returns when all are done. `fn` must not call `parallel_for` again.
  virtual void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
  }

  /// **optional** (default: nothing) — `w` [n x k] will be multiplied by `matmul`: a backend
  /// that repacks its weights does it now (at load) rather than in the first request.
  virtual void prepare_weight(const float* w, int64_t n, int64_t k) {
    (void)w, (void)n, (void)k;
  }

  /// **optional** (default: nothing) — `w` [n x k] will not be multiplied by again (an expert
  /// replica moved off this rank, or its buffer is about to be freed): drop what was kept for it,
  /// so the memory is returned and a later weight at the same address is not mistaken for it.
  virtual void release_weight(const float* w, int64_t n, int64_t k) {
    (void)w, (void)n, (void)k;
  }

  /// **optional** (default: 0) — bytes the backend keeps for prepared weights (repacked copies,
  /// device copies): the rank's resident weight memory beyond the weights' own buffers.
  virtual std::size_t prepared_weight_bytes() const { return 0; }

  /// Totals of the matrix products run so far (for roofline figures).
  struct matmul_stats {
    uint64_t calls = 0;
    double flops = 0; ///< 2*m*n*k of the rows asked for (padding not counted).
    double seconds = 0;
  };

  /// **optional** (default: zeros) — matrix product totals since construction.
  virtual matmul_stats stats() const { return {}; }

  /// **optional** (default: 1) — how many workers `parallel_for` uses, to size per-worker scratch.
  virtual int workers() const { return 1; }

  /// **optional** (default: 0) — index of the calling worker inside `parallel_for`, in [0, workers()).
  virtual int worker_index() const { return 0; }
};

} // namespace deepinfer::engine
