#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace deepinfer::engine::testing {

/// `n` floats uniform in [-1, 1) drawn from `seed` (matrix product operands).
inline std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng{seed};
  std::uniform_real_distribution<float> d{-1.0f, 1.0f};
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v)
    x = d(rng);
  return v;
}

} // namespace deepinfer::engine::testing
