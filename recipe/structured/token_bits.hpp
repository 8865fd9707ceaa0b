#pragma once

// Walks a bitmask over the vocabulary (bit i = token i): the masks, the lexer classes and the
// tests all read their bits this one way.

#include <cstdint>
#include <vector>

#include "recipe/prompt_segment.hpp"

namespace deepinfer::recipe::so {

/// Calls `f(id)` for every set bit of `bits`, in ascending id order.
template <class F>
void for_each_token(const std::vector<std::uint64_t>& bits, F&& f) {
  for (std::size_t w = 0; w < bits.size(); ++w)
    for (auto b = bits[w]; b != 0; b &= b - 1)
      f(static_cast<token_id>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(b))));
}

/// The ids whose bits are set, ascending.
inline std::vector<token_id> token_ids(const std::vector<std::uint64_t>& bits) {
  std::vector<token_id> out;
  for_each_token(bits, [&](token_id t) { out.push_back(t); });
  return out;
}

} // namespace deepinfer::recipe::so
