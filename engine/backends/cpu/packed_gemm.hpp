#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace deepinfer::engine {

/// y [m x n] (+)= x [m x k] . w^T for w [n x k] row-major, on AVX-512, from weights repacked
/// once into panels of 16 output columns ([n/16][k][16]).
///
/// Why not OpenBLAS for these: the model's products are narrow (n, k of 16..512) and, in a
/// prefill that hits the cache or in decode, short (a few to a few hundred rows, tens per routed
/// expert). OpenBLAS switches kernels by m, so the backend had to pad every call to 64 rows to
/// keep a row's result independent of its batch, which tripled the routed experts' work, and
/// packed x on every call. Here every output is one FMA chain over k in order, whatever m, the
/// row's place in the call or the thread that runs it: row-independent by construction.
class packed_gemm {
public:
  /// True when this CPU runs the kernel and the shape fits it (n a multiple of 16).
  static bool handles(int64_t n, int64_t k);

  /// Rows [row_begin, row_end) of the product with `wp` = packed(w, n, k) (callers split the
  /// rows of one product over threads; any split gives the same bits).
  static void multiply(const float* x, int64_t k, const float* wp, int64_t n, float* y,
                       bool accumulate, int64_t row_begin, int64_t row_end);

  /// The packed form of `w` (packed on its first use, kept as long as this object: weights live
  /// as long as the engine; thread-safe).
  const float* packed(const float* w, int64_t n, int64_t k);

private:
  struct key {
    const float* w;
    int64_t n, k;
    bool operator==(const key&) const = default;
  };
  struct key_hash {
    std::size_t operator()(const key& k) const {
      return std::hash<const float*>{}(k.w) ^ (static_cast<std::size_t>(k.n) * 0x9E3779B97F4A7C15ull) ^
             static_cast<std::size_t>(k.k);
    }
  };
  std::mutex mtx_;
  std::unordered_map<key, std::vector<float>, key_hash> packed_;
};

} // namespace deepinfer::engine
