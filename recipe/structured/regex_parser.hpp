#pragma once

#include "recipe/structured/regex_ast.hpp"

#include <string_view>

namespace deepinfer::recipe::so {

/// A parsed ECMA-262 regular expression (the JSON Schema `pattern` dialect): literals, `.`,
/// classes (`[...]`, `\d \w \s` and negations), groups (`(...)`, `(?:...)`, `(?<n>...)`),
/// `|`, quantifiers (`* + ? {n} {n,} {n,m}`, lazy forms read as greedy) and `^`/`$` at the ends.
/// Lookaround, backreferences and anchors elsewhere throw `compile_error`.
struct parsed_regex {
  rx body;
  bool anchored_start = false;
  bool anchored_end = false;
};

/// Parses `pattern` (UTF-8); every code point spelled `sp`.
parsed_regex parse_regex(std::string_view pattern, spelling sp);

/// `pattern` as JSON Schema means it: found anywhere in the string unless anchored.
rx search_regex(std::string_view pattern, spelling sp);

} // namespace deepinfer::recipe::so
