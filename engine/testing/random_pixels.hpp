#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::engine::testing {

/// A w x h 8-bit RGB picture of noise drawn from `seed` (an LCG: the same bytes on every machine).
inline std::vector<uint8_t> random_pixels(int w, int h, uint32_t seed) {
  std::vector<uint8_t> px(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& p : px) {
    x = x * 1664525u + 1013904223u;
    p = static_cast<uint8_t>(x >> 24);
  }
  return px;
}

} // namespace deepinfer::engine::testing
