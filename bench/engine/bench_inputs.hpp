#pragma once

// What the engine benches feed the engine: comma lists from the command line, seeded prompts.

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "engine/testing/random_tokens.hpp"

namespace deepinfer::bench {

/// "1,8,64" -> {1, 8, 64}.
inline std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    v.push_back(std::stoll(x));
  return v;
}

/// `n` token ids drawn from `seed` (any id of a `vocab`-token vocabulary).
using engine::testing::random_tokens;
inline std::vector<int32_t> random_prompt(int64_t n, uint64_t seed, int32_t vocab = 129280) {
  return random_tokens(n, seed, vocab);
}

} // namespace deepinfer::bench
