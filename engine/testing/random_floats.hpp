#pragma once

#include <cstdint>
#include <cstring>
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

/// Cuts each value to a bf16 value (its low 16 bits zeroed), as a bf16 checkpoint's weights are
/// once widened to f32.
inline void cut_to_bf16_values(std::vector<float>& v) {
  for (float& x : v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof(bits));
    bits &= 0xFFFF0000u;
    std::memcpy(&x, &bits, sizeof(bits));
  }
}

} // namespace deepinfer::engine::testing
