#pragma once

#include "recipe/prompt_segment.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::recipe {
class tokenizer;
}

namespace deepinfer::recipe::so {

class level_trie;

/// A trie of byte strings in preorder: node 0 is the root; node i's subtree is [i, skip(i)).
/// Used for the vocabulary (every ordinary token) and for the small suffix tries of the masks.
class byte_trie {
public:
  /// Adds `bytes` ending in `id` (call in any order, then `build`).
  void add(std::string_view bytes, token_id id);
  void build();

  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(byte_.size()); }
  std::uint8_t byte(std::uint32_t i) const noexcept { return byte_[i]; }
  std::uint16_t depth(std::uint32_t i) const noexcept { return depth_[i]; }
  std::uint32_t skip(std::uint32_t i) const noexcept { return skip_[i]; }
  /// Tokens ending at node i.
  const token_id* tokens_begin(std::uint32_t i) const noexcept { return ids_.data() + tok_off_[i]; }
  const token_id* tokens_end(std::uint32_t i) const noexcept { return ids_.data() + tok_off_[i + 1]; }
  std::uint16_t max_depth() const noexcept { return max_depth_; }
  /// The nodes packed for the mask walk (8 bytes each): subtree end, byte, depth, token count.
  struct packed {
    std::uint32_t skip;
    std::uint8_t byte;
    std::uint8_t depth;
    std::uint16_t ntok;
  };
  const packed* nodes() const noexcept { return packed_.data(); }
  std::size_t bytes() const noexcept { return byte_.size() * 11 + ids_.size() * 4; }

private:
  std::vector<std::pair<std::string, token_id>> pending_;
  std::vector<std::uint8_t> byte_;
  std::vector<std::uint16_t> depth_;
  std::vector<std::uint32_t> skip_;
  std::vector<std::uint32_t> tok_off_;
  std::vector<token_id> ids_;
  std::vector<packed> packed_;
  std::uint16_t max_depth_ = 0;
};

/// The vocabulary as the masks see it: every ordinary token's bytes in a `byte_trie`, the
/// end-of-sequence id (allowed when the constraint is complete) and a fingerprint of both.
/// The code point a constraint's grammar uses for V4.1's `｜DSML｜` special token (a forced tool
/// call), and its UTF-8 bytes, which the vocabulary gives that token.
inline constexpr std::uint32_t dsml_code_point = 0x10FFFD;
inline constexpr std::string_view dsml_spelling = "\xF4\x8F\xBF\xBD";

class vocabulary {
public:
  /// From a loaded tokenizer (added/special tokens are never allowed by a constraint, except
  /// V4.1's `｜DSML｜`, spelled `dsml_spelling`, for forced tool calls).
  static std::shared_ptr<const vocabulary> of(const tokenizer& tok);
  /// From explicit token byte strings (tests); `eos` is one past them unless given.
  static std::shared_ptr<const vocabulary> of(std::vector<std::string> tokens, token_id eos);

  const byte_trie& trie() const noexcept { return trie_; }
  /// The same trie numbered level by level (the cold mask walk's layout).
  const level_trie& levels() const noexcept { return *levels_; }
  std::size_t size() const noexcept { return size_; }
  token_id eos() const noexcept { return eos_; }
  std::uint64_t fingerprint() const noexcept { return fingerprint_; }
  std::string_view bytes(token_id id) const noexcept { return bytes_[static_cast<std::size_t>(id)]; }
  /// Words of a mask (`size()` bits).
  std::size_t mask_words() const noexcept { return (size_ + 63) / 64; }

private:
  byte_trie trie_;
  std::shared_ptr<const level_trie> levels_;
  std::vector<std::string> bytes_;
  std::size_t size_ = 0;
  token_id eos_ = 0;
  std::uint64_t fingerprint_ = 0;
};

} // namespace deepinfer::recipe::so
