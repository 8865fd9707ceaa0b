#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deepinfer::kv {

/// Tokens per block of the persistent KV cache (DESIGN §4.1).
inline constexpr std::size_t block_tokens = 128;

/// A token id of the tokenizer's vocabulary.
using token_id = int32_t;

/// The 128-bit key of one block in a hash chain. Equal keys mean equal model and equal prefix.
struct block_key {
  uint64_t lo = 0;
  uint64_t hi = 0;

  friend bool operator==(const block_key&, const block_key&) = default;
  friend auto operator<=>(const block_key&, const block_key&) = default;

  /// 32 lowercase hex digits, `hi` first; the file name of the block in a store.
  std::string to_hex() const {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(32, '0');
    for (int i = 0; i < 16; ++i) {
      out[15 - i] = digits[(hi >> (4 * i)) & 0xf];
      out[31 - i] = digits[(lo >> (4 * i)) & 0xf];
    }
    return out;
  }

  /// Parses what `to_hex` writes; `nullopt` for anything else.
  static std::optional<block_key> from_hex(std::string_view text) {
    if (text.size() != 32)
      return std::nullopt;
    block_key key;
    for (std::size_t i = 0; i < 32; ++i) {
      const char c = text[i];
      uint64_t v = 0;
      if (c >= '0' && c <= '9')
        v = static_cast<uint64_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v = static_cast<uint64_t>(c - 'a' + 10);
      else
        return std::nullopt;
      uint64_t& half = i < 16 ? key.hi : key.lo;
      half = (half << 4) | v;
    }
    return key;
  }
};

/// Hash functor for unordered containers; XXH3 output is uniform, so the low word is enough.
struct block_key_hash {
  std::size_t operator()(const block_key& key) const noexcept {
    return static_cast<std::size_t>(key.lo);
  }
};

} // namespace deepinfer::kv
