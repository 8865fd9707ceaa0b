#pragma once

#include "recipe/structured/byte_automaton.hpp"
#include "recipe/structured/compile_error.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace deepinfer::recipe::so {

/// Validates JSON values against a JSON Schema (draft 2020-12 and the older spellings the
/// compiler reads: array `items`, `additionalItems`, `dependencies`, draft 4's boolean exclusive
/// bounds), for the compiler's finite cases: an `enum`/`const` beside other keywords is the listed
/// values that pass the whole schema, so every keyword decided here (`not`, `if`, `uniqueItems`,
/// `dependencies`...) is exact there. `$ref` resolves in `root`; `pattern`, `format` and
/// `multipleOf` use the compiler's own automata on the value as it will be written (its compact
/// JSON spelling), so a value passes exactly when the lexeme it becomes would. Unknown keywords
/// are annotations (the specification's rule); what cannot be decided (`unevaluated*`,
/// `$dynamicRef`, a reference outside the document) throws compile_error. An unknown `format` is an
/// annotation too.
class json_validator {
public:
  using json = nlohmann::ordered_json;
  json_validator(const json& root, budget& b) : root_(root), budget_(b) {}
  bool valid(const json& value, const json& schema, int depth = 0);

  /// JSON equality: numbers by value (1 == 1.0), objects whatever their key order.
  static bool equal(const json& a, const json& b);

private:
  const json& resolve(const std::string& ref) const;
  /// Whether the automaton of `key` (built once by `make`, which returns a byte_dfa) accepts `text`.
  template <class Make>
  bool matches(const std::string& key, const std::string& text, Make make);
  /// Whether ECMA-262 `pattern` finds a match in the string spelled (as JSON) `spelled`.
  bool finds(const std::string& pattern, const std::string& spelled);
  bool valid_number(const json& v, const json& s);
  bool valid_string(const json& v, const json& s);
  bool valid_array(const json& v, const json& s, int depth);
  bool valid_object(const json& v, const json& s, int depth);

  const json& root_;
  budget& budget_;
  std::map<std::string, byte_dfa> automata_;
};

} // namespace deepinfer::recipe::so
