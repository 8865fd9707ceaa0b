#pragma once

#include "recipe/base/expected.hpp"
#include "recipe/prompt_segment.hpp"
#include "recipe/render/template_version.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deepinfer::recipe {

class tokenizer;

/// The special tokens one template version places, with their ids looked up in the tokenizer (so
/// no id is hard-coded here: V3.2 and V4.1 put `<think>` at different ids).
class special_table {
public:
  /// Spelling -> id, e.g. the tokenizer's `special_id`.
  using lookup = std::function<std::optional<token_id>(std::string_view)>;

  /// Builds the table for `version`. Fails (naming the spelling) when a token the template always
  /// needs is missing. The V4.1 image placeholder, absent from the published tokenizer files, falls
  /// back to the spec's id 129264.
  static expected<special_table, std::string> build(template_version version, const lookup& find);

  /// Builds the table from a loaded tokenizer (`tokenizer::special_id`).
  static expected<special_table, std::string> from_tokenizer(template_version version, const tokenizer& tok);

  /// Builds the table from a tokenizer.json file's `added_tokens` (reads only that array).
  static expected<special_table, std::string> from_tokenizer_json(template_version version, const std::string& path);

  /// The id of `spelling`, nullopt when this version has no such token.
  std::optional<token_id> id(std::string_view spelling) const;

  /// All known (spelling, id) pairs; the renderer recognises these spellings in its own template text.
  const std::vector<std::pair<std::string, token_id>>& entries() const noexcept { return entries_; }

  template_version version() const noexcept { return version_; }

private:
  template_version version_ = template_version::dsv41;
  std::vector<std::pair<std::string, token_id>> entries_;
};

/// Spellings the templates use (spec §1, §7).
namespace spelling {
inline constexpr std::string_view bos = "<｜begin▁of▁sentence｜>";
inline constexpr std::string_view eos = "<｜end▁of▁sentence｜>";
inline constexpr std::string_view user = "<｜User｜>";
inline constexpr std::string_view assistant = "<｜Assistant｜>";
inline constexpr std::string_view system = "<｜System｜>";
inline constexpr std::string_view think_open = "<think>";
/// Fill-in-the-middle (prefix, suffix, middle order): `fim_begin` prefix `fim_hole` suffix `fim_end`.
inline constexpr std::string_view fim_begin = "<｜fim▁begin｜>";
inline constexpr std::string_view fim_hole = "<｜fim▁hole｜>";
inline constexpr std::string_view fim_end = "<｜fim▁end｜>";
inline constexpr std::string_view think_close = "</think>";
inline constexpr std::string_view dsml = "｜DSML｜";
inline constexpr std::string_view image = "<｜deepseek_image｜>";
} // namespace spelling

} // namespace deepinfer::recipe
