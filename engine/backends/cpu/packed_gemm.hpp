#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/backends/weight_key.hpp"

namespace deepinfer::engine::kernels {
struct kernel_table;
} // namespace deepinfer::engine::kernels

namespace deepinfer::engine {

/// The packed form of one weight: f32 panels, or bf16 panels (exactly the same values) for a
/// weight streamed from memory whose values are all bf16. Exactly one pointer is set.
struct packed_panels {
  const float* f32 = nullptr;
  const uint16_t* bf16 = nullptr;

  /// y (+)= x [rows x k] . w^T over w's output columns [j0, j0 + cols), j0 a multiple of 16, by
  /// the kernels of `kt`; y's rows `ldy` floats apart.
  void gemm(const kernels::kernel_table& kt, const float* x, int64_t rows, int64_t k, int64_t j0,
            int64_t cols, float* y, int64_t ldy, bool accumulate) const;
};

/// One weight's panels (packed_gemm.cpp).
struct packed_copy;

/// The packed copies of a backend's weights: w [n x k] laid out once as panels of 16 output
/// columns ([ceil(n/16)][k][16], zero past n; `kernels::pack_panels`) for the kernel tables'
/// `gemm_packed`.
///
/// A weight larger than `kernels::streamed_weight_bytes` whose values are all bf16 (a bf16
/// checkpoint, widened to f32 at load) is packed in bf16: a decode step streams it from memory
/// (the lm_head: vocabulary x hidden), so half the bytes is about half the time, and widening a
/// bf16 is exact, so the products keep their bits. Smaller weights stay in the caches, where the
/// widening would only cost.
///
/// The ranks of one process that hold the same values (the ranks of the embedded default, which
/// share one `model_weights`; expert slots that hold the same expert) share one packed copy: the
/// copies are found by their content (XXH3-128 of the values and the shape), so a copy is never
/// taken for another weight that happens to live at the same address later.
///
/// Why not OpenBLAS: the model's products are narrow (n, k of 16..512) and, in a prefill that
/// hits the cache or in decode, short (a few to a few hundred rows, tens per routed expert).
/// OpenBLAS switches kernels (and so summation orders) by m and by CPU, so a row's result would
/// depend on its batch and on the machine; it also packs x on every call. Here every output is
/// one FMA chain over k in order, whatever m, the row's place in the call, the thread or the ISA.
class packed_gemm {
public:
  /// The packed form of `w` (packed on its first use, or the copy another `packed_gemm` of this
  /// process made of the same values; kept as long as this object or until `release`: weights
  /// live as long as the engine; thread-safe).
  packed_panels packed(const float* w, int64_t n, int64_t k);
  /// Drops the packed form of `w` (nothing when there is none). Precondition: no product with
  /// it is running.
  void release(const float* w, int64_t n, int64_t k);
  /// Bytes of every packed copy held (a copy shared with other backends counts in each).
  std::size_t bytes() const;

private:
  mutable std::mutex mtx_;
  std::size_t bytes_ = 0;
  std::unordered_map<weight_key, std::shared_ptr<const packed_copy>, weight_key_hash> packed_;
};

} // namespace deepinfer::engine
