#pragma once

#include "recipe/structured/regex_ast.hpp"

#include <string_view>

namespace deepinfer::recipe::so {

/// A parsed ECMA-262 regular expression (the JSON Schema `pattern` dialect): literals, `.`,
/// classes (`[...]`, `\d \w \s` and negations), groups (`(...)`, `(?:...)`, `(?<n>...)`),
/// `|`, quantifiers (`* + ? {n} {n,} {n,m}`, lazy forms read as greedy) and the anchors `^` and
/// `$` anywhere (`^$|^[a-z]+$`, `(^a|b$)`). Lookaround, backreferences and word boundaries throw
/// `compile_error`. The anchors are zero-width, so the pattern is kept as four anchor-free
/// languages: the strings it matches along paths that pass no anchor, a `^` (the match must
/// start the string), a `$` (must end it), or both (must be the whole string).
struct parsed_regex {
  rx unanchored = rx::none();
  rx from_start = rx::none();
  rx to_end = rx::none();
  rx whole = rx::none();

  /// What the pattern matches as a whole string (a `regex` constraint, a grammar terminal):
  /// every anchor then holds.
  rx full_match() const;
};

/// Parses `pattern` (UTF-8); every code point spelled `sp`.
parsed_regex parse_regex(std::string_view pattern, spelling sp);

/// `pattern` as JSON Schema means it: found anywhere in the string unless anchored.
rx search_regex(std::string_view pattern, spelling sp);

} // namespace deepinfer::recipe::so
