#pragma once

#include "recipe/structured/regex_ast.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// A pattern that opens with lookaheads after its `^` (`^(?!org\.bukkit\.)[a-z.]+$`,
/// `^(?=[^=]+$)(?!\s+$).+$`): they look at the start of the string, so the pattern finds what
/// `rest` finds among the strings that every `must` pattern finds and no `must_not` one does
/// (each of those a lookahead's body anchored at the start). Also "a line with no X",
/// `^((?!X).)*$`: the rest `^.*$`, and X, found anywhere, must not be. Languages, not an
/// automaton: the callers intersect and subtract automata. Lookaround anywhere else stays
/// unsupported.
struct leading_lookaheads {
  std::string rest;
  std::vector<std::string> must;
  std::vector<std::string> must_not;
};
/// nullopt when `pattern` has neither form.
std::optional<leading_lookaheads> split_leading_lookaheads(std::string_view pattern);

} // namespace deepinfer::recipe::so
