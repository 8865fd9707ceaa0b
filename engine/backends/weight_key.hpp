#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace deepinfer::engine {

/// A weight as a backend keeps its prepared copy (packed panels, a device copy): the forward's
/// buffer and its shape [n x k]. Weights stay put while the backend lives (`backend::matmul`).
struct weight_key {
  const float* w;
  int64_t n, k;
  bool operator==(const weight_key&) const = default;
};

/// Hash of a `weight_key`, for unordered maps of prepared copies.
struct weight_key_hash {
  std::size_t operator()(const weight_key& x) const {
    return std::hash<const float*>{}(x.w) ^ (static_cast<std::size_t>(x.n) * 0x9E3779B97F4A7C15ull) ^
           static_cast<std::size_t>(x.k);
  }
};

} // namespace deepinfer::engine
