#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace deepinfer::recipe {

/// A token id of the model's vocabulary (DeepSeek: 129,280 ids; the tokenizer produces < 128,847).
using token_id = std::int32_t;

/// One piece of a rendered prompt: either plain text, which the tokenizer encodes as ordinary text
/// (special-token spellings inside it never become special ids), or one special token the renderer
/// placed on purpose.
struct prompt_segment {
  /// For plain text: the text. For a special token: its spelling (for display, e.g. `<｜User｜>`).
  std::string text;
  /// Set exactly when this segment is a special token placed by the renderer.
  std::optional<token_id> special_id;

  /// A plain-text segment.
  static prompt_segment plain(std::string s) { return {std::move(s), std::nullopt}; }
  /// A special-token segment; `spelling` is only used to print the prompt as text.
  static prompt_segment special(token_id id, std::string spelling) { return {std::move(spelling), id}; }

  bool is_special() const noexcept { return special_id.has_value(); }
};

/// A rendered prompt: segments in order.
using prompt_segments = std::vector<prompt_segment>;

} // namespace deepinfer::recipe
