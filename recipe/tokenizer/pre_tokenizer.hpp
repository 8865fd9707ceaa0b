#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace deepinfer::recipe {

/// The DeepSeek V3/V3.2/V4 pre-tokenizer, hand-written: the three Split regexes of
/// tokenizer.json (`\p{N}{1,3}`, `[一-龥぀-ゟ゠-ヿ]+`, the six-alternative word regex), all
/// `Isolated`, evaluated on code points exactly as Oniguruma does (leftmost match, alternatives in
/// order, greedy with backtracking). Invalid UTF-8 subparts count as unassigned code points.
/// Holds scratch buffers: one instance per thread.
class pre_tokenizer {
public:
  /// Splits `text` into pieces; `ends` receives the byte offset where each piece ends (ascending,
  /// the last is text.size()). Empty text gives no pieces.
  void split(std::string_view text, std::vector<std::uint32_t>& ends);

  /// Whether cutting `text` at byte `pos` and pre-tokenizing both halves gives the same pieces
  /// as the whole: true when text[pos-1] is LF and text[pos] starts a non-whitespace code point
  /// (no regex alternative reaches across such a line break, and none looks behind).
  static bool is_safe_cut(std::string_view text, std::size_t pos) noexcept;

  /// Where to end a chunk of `text` that starts at `from` and should hold about `target` bytes:
  /// the first safe cut at or after from + target, or text.size() when the rest is short or has
  /// no safe cut.
  static std::size_t next_cut(std::string_view text, std::size_t from, std::size_t target) noexcept;

private:
  void split_words(std::size_t b, std::size_t e, std::vector<std::uint32_t>& ends) const;
  std::size_t match_at(std::size_t p, std::size_t e) const noexcept;

  std::vector<std::uint16_t> cls_; // class bits per code point
  std::vector<std::uint32_t> off_; // byte offset per code point, plus the end
};

} // namespace deepinfer::recipe
