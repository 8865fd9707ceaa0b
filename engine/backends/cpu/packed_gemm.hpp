#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/backends/weight_key.hpp"

namespace deepinfer::engine {

/// The packed copies of a backend's weights: w [n x k] laid out once as panels of 16 output
/// columns ([ceil(n/16)][k][16], zero past n; `kernels::pack_panels`) for the kernel tables'
/// `gemm_packed`.
///
/// Why not OpenBLAS: the model's products are narrow (n, k of 16..512) and, in a prefill that
/// hits the cache or in decode, short (a few to a few hundred rows, tens per routed expert).
/// OpenBLAS switches kernels (and so summation orders) by m and by CPU, so a row's result would
/// depend on its batch and on the machine; it also packs x on every call. Here every output is
/// one FMA chain over k in order, whatever m, the row's place in the call, the thread or the ISA.
class packed_gemm {
public:
  /// The packed form of `w` (packed on its first use, kept as long as this object: weights live
  /// as long as the engine; thread-safe).
  const float* packed(const float* w, int64_t n, int64_t k);
  /// Drops the packed form of `w` (nothing when there is none). Precondition: no product with
  /// it is running.
  void release(const float* w, int64_t n, int64_t k);
  /// Bytes of every packed copy held.
  std::size_t bytes() const;

private:
  mutable std::mutex mtx_;
  std::size_t bytes_ = 0;
  std::unordered_map<weight_key, std::vector<float>, weight_key_hash> packed_;
};

} // namespace deepinfer::engine
