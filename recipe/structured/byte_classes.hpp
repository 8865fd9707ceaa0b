#pragma once

// Internal to the byte automata (byte_dfa.cpp, byte_dfa_product.cpp): byte-class refinement and
// the hash mix their tables use.

#include <array>
#include <cstdint>
#include <vector>

namespace deepinfer::recipe::so::detail {

// Byte classes that tell apart every byte some map tells apart: a byte's class is the tuple of
// its classes in each map, numbered in the order of the smallest byte (so ids stay ordered).
struct class_refiner {
  std::array<std::uint8_t, 256> cls{};
  std::uint32_t nc = 1;
  template <class Map>
  void by(const Map& m) {
    thread_local std::vector<std::int16_t> ids(256 * 256, -1);
    std::array<std::uint8_t, 256> out{};
    std::uint32_t n = 0;
    for (int b = 0; b < 256; ++b) {
      auto& id = ids[static_cast<std::size_t>(cls[b]) * 256 + m[b]];
      if (id < 0)
        id = static_cast<std::int16_t>(n++);
      out[b] = static_cast<std::uint8_t>(id);
    }
    for (int b = 0; b < 256; ++b)
      ids[static_cast<std::size_t>(cls[b]) * 256 + m[b]] = -1;
    cls = out;
    nc = n;
  }
};

inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

} // namespace deepinfer::recipe::so::detail
