#pragma once

#include "recipe/prompt_segment.hpp"
#include "recipe/render/special_table.hpp"

#include <string_view>

namespace deepinfer::recipe {

/// Accumulates a prompt: client text stays plain, template text has its special-token spellings
/// turned into special segments. Adjacent plain pieces are merged, so the tokenizer sees the same
/// text runs as a whole-string encode would.
class segment_builder {
public:
  explicit segment_builder(const special_table& specials) : specials_(specials) {}

  /// Appends client-supplied text (message content, tool names and arguments): never special.
  void text(std::string_view s);
  /// Appends template text written by the renderer; spellings in the table become special ids.
  void templ(std::string_view s);
  /// Appends one special token by spelling. Precondition: the table has it.
  void special(std::string_view spelling);

  /// The segments built so far (the builder is left empty).
  prompt_segments take() { return std::move(out_); }

private:
  const special_table& specials_;
  prompt_segments out_;
};

/// The prompt as text: segments concatenated, specials as their spellings.
std::string to_text(const prompt_segments& segments);

} // namespace deepinfer::recipe
