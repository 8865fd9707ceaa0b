#pragma once

#include "recipe/prompt_segment.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace deepinfer::recipe {

/// Byte-level BPE as HuggingFace `tokenizers` runs it: a piece starts as one symbol per byte and
/// the adjacent pair with the lowest merge rank is merged first (leftmost on ties) until no pair
/// has a merge. No dropout, no unknown token (every byte has a token).
class bpe_model {
public:
  /// One merge rule: `left` + `right` -> `merged`, by rank (its index in the merges list).
  struct merge {
    token_id left;
    token_id right;
    token_id merged;
  };

  /// `byte_ids[b]`: the token of the single byte b; `merges` in rank order.
  bpe_model(const token_id (&byte_ids)[256], const std::vector<merge>& merges);

  /// Appends the ids of one pre-tokenized piece (raw bytes, not the byte-level alphabet).
  void encode_piece(std::string_view piece, std::vector<token_id>& out) const;

private:
  struct slot {
    std::uint64_t key; // left << 32 | right; empty_key when free
    std::uint32_t rank;
    token_id merged;
  };
  static constexpr std::uint64_t empty_key = ~std::uint64_t{0};

  const slot* find(token_id a, token_id b) const noexcept {
    const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    std::size_t i = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
    for (;;) {
      const slot& s = slots_[i];
      if (s.key == key)
        return &s;
      if (s.key == empty_key)
        return nullptr;
      i = (i + 1) & mask_;
    }
  }
  void encode_long(std::string_view piece, std::vector<token_id>& out) const;

  token_id byte_ids_[256];
  std::vector<slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 0;
};

} // namespace deepinfer::recipe
