#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace deepinfer::engine::testing {

/// `n` token ids drawn from `seed`, avoiding nothing: any id of the vocabulary is valid.
inline std::vector<int32_t> random_tokens(int64_t n, uint64_t seed, int32_t vocab = 129280) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> t(static_cast<std::size_t>(n));
  for (auto& x : t)
    x = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return t;
}

} // namespace deepinfer::engine::testing
