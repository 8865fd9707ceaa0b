#pragma once

#include "recipe/structured/compile_error.hpp"
#include "recipe/structured/grammar.hpp"

#include <memory>
#include <string_view>

namespace deepinfer::recipe::so {

/// A grammar whose language is the strings `pattern` (ECMA-262) matches whole.
std::shared_ptr<const grammar> compile_regex(std::string_view pattern, budget& b);

/// A Lark-style EBNF grammar: `name: alt | alt` rules (also `::=`), items "literal", /regex/,
/// rule names, ( ), [ ], * + ?, comments `//` and `#`; the start rule is `start` (else the
/// first). Terminals are matched as written (no implicit whitespace).
std::shared_ptr<const grammar> compile_ebnf(std::string_view text, budget& b);

} // namespace deepinfer::recipe::so
