#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
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

  /// One product of `matmul_shared_input`: y [m x n] (+)= x . w^T, `w` a weight [n x k].
  struct product {
    const float* w;
    int64_t n;
    float* y;
    bool accumulate = false;
  };

  /// **optional** (default: `matmul` for each, in order) — several products of one input x [m x k]
  /// (a layer's q, k and v): a backend that moves x to a device moves it once. The same bits as
  /// the separate products.
  virtual void matmul_shared_input(const float* x, int64_t m, int64_t k, std::span<const product> products) {
    for (const auto& p : products)
      matmul(x, m, k, p.w, p.n, p.y, p.accumulate);
  }

  /// **optional** (default: two products, `kernels().silu_mul`, a third product) — the gated MLP
  /// of an expert: out [m x h] (+)= (silu(x . w1^T) * (x . w3^T)) . w2^T, x [m x h], w1 and w3
  /// [f x h], w2 [h x f]; `g` and `u` are scratch of m x f floats each. A backend on a device
  /// runs the three products and the gate there with one copy in and one out. The same bits as
  /// the steps done one by one.
  virtual void gated_mlp(const float* x, int64_t m, int64_t h, const float* w1, const float* w3, int64_t f,
                         const float* w2, float* out, bool accumulate, float* g, float* u) {
    matmul(x, m, h, w1, f, g);
    matmul(x, m, h, w3, f, u);
    kernels().silu_mul(g, u, m * f);
    matmul(g, m, f, w2, h, out, accumulate);
  }

  /// One expert of `gated_mlps`: its weights (w1, w3 [f x h], w2 [h x f]) and how many rows it takes.
  struct expert_mlp {
    const float* w1;
    const float* w3;
    const float* w2;
    int64_t rows;
  };

  /// **optional** (default: `gated_mlp` for each expert, in order) — a MoE layer's experts at
  /// once: expert i takes the next `rows` rows of x [R x h] (R the sum of rows) and writes the
  /// same rows of out [R x h] (not accumulated); `g` and `u` are scratch of R x f floats each. A
  /// backend on a device does the whole layer in one round trip. The same bits as expert by expert.
  virtual void gated_mlps(const float* x, int64_t h, int64_t f, std::span<const expert_mlp> experts, float* out,
                          float* g, float* u) {
    int64_t at = 0;
    for (const auto& e : experts) {
      gated_mlp(x + at * h, e.rows, h, e.w1, e.w3, f, e.w2, out + at * h, false, g, u);
      at += e.rows;
    }
  }

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

  /// **optional** (default: empty, they fit: the CPU backend's weights are the mapped file) —
  /// whether weights of `bytes` (f32) can be prepared; otherwise what is short and what to do.
  /// Asked once at load, before any weight is prepared, so a model that does not fit a device is a
  /// clear error instead of a failed allocation mid-load.
  virtual std::string check_weight_room(std::size_t bytes) const {
    (void)bytes;
    return {};
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
