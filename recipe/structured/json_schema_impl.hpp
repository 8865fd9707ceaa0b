#pragma once

// Internal to the JSON Schema compiler: normalization (json_schema_normalize.cpp) and grammar
// construction (json_schema_build.cpp).

#include "recipe/structured/grammar.hpp"
#include "recipe/structured/json_lexemes.hpp"
#include "recipe/structured/json_schema.hpp"
#include "recipe/structured/json_validate.hpp"

#include <nlohmann/json.hpp>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace deepinfer::recipe::so::detail {

using json = nlohmann::ordered_json;

/// `true` / `{}` (anything) and `false` (nothing).
inline bool is_true(const json& s) { return (s.is_boolean() && s.get<bool>()) || (s.is_object() && s.empty()); }
inline bool is_false(const json& s) { return s.is_boolean() && !s.get<bool>(); }
/// Both schemas: `{"allOf": [x, y]}`, or one of them where the other is true, false or the same.
json conj(const json& x, const json& y);
/// Whether the patternProperties `pattern` finds a match in `key` (ECMA-262 search).
bool pattern_finds(const std::string& pattern, const std::string& key, budget& b);
/// The JSON types `s` admits ("integer" too when "number" is there; all seven without `type`).
std::set<std::string> types_of(const json& s);
/// `type`'s value for the set `t` (one name, or an array; "integer" folded into "number").
json type_json(const std::set<std::string>& t);
/// The listed values of `s` (`const`, `enum`, or those every member of an `allOf` lists), if any.
std::optional<json> values_of(const json& s);

/// The value of the count keyword `k` of `s` (minLength, maxItems, minProperties, ...): nullopt
/// when absent, a compile_error when it is not a non-negative number.
std::optional<double> count_keyword(const json& s, const char* k);

/// Lexemes of JSON itself that every schema uses unconstrained: built once per process (their
/// subset construction, once per schema, was a tenth of a large schema's compile).
enum class json_constant : std::uint8_t { any_string, any_number, any_integer, any_key, string_char, int32 };
/// `any_key` is any string then `:`; `int32` an integer in OpenAPI's int32 range (Kubernetes
/// schemas have dozens: its subset construction was most of their compile); all but `string_char` (one character inside a string)
/// start with optional whitespace, at most `max_ws` bytes of it (before the `:` too).
const byte_dfa& json_constant_dfa(json_constant c, std::uint32_t max_ws = rx::unbounded);

/// An object's "other key" lexeme: any key (then `:`) but the `declared` ones, spelled
/// canonically, and those the `found` automata (its patternProperties' keys) accept.
byte_dfa other_key_dfa(const std::vector<std::string>& declared, std::span<const byte_dfa> found, budget& b,
                       std::uint32_t max_ws = rx::unbounded);
/// Its shortest match in bytes when found without building it (`"":` or `"c":`), else nullopt.
std::optional<std::int32_t> other_key_shortest(const std::vector<std::string>& declared);

/// A string in the JSON Schema format `name` (date-time, uuid, email...), after optional
/// whitespace: built once per process like `json_constant_dfa`; nullptr for an unsupported one.
const byte_dfa* json_format_dfa(const std::string& name, std::uint32_t max_ws = rx::unbounded);

/// The strings `s`'s text keywords accept (pattern, x-patterns, format; minus those of each
/// schema in x-not-strings), after at most `ws` whitespace bytes, counts not included; nullopt
/// when it has none (any string). Patterns and formats accept one spelling per string (the
/// compact JSON one), so a difference of two of them removes a value in every spelling it has.
std::optional<byte_dfa> string_text_dfa(const json& s, std::uint32_t ws, budget& b);
/// What `string_text_dfa` reads of `s`, as a cache key.
std::string string_text_key(const json& s);

/// Numbers (no exponent; after JSON whitespace, any amount) that are multiples of `m` (> 0):
/// a compile_error for a zero, negative or too fine / too large one.
byte_dfa multiple_of_dfa(const json_lex::decimal& m, budget& b);

/// Checks the JSON type of every keyword the compiler reads, through every subschema: a
/// compile_error naming the keyword and its JSON Pointer for the first that is wrong.
void check_schema_shape(const json& schema);

/// The schema the local `$ref` `ref` names in `root` (a compile_error when it is not local or
/// does not resolve).
const json& resolve_ref(const json& root, const std::string& ref);

/// Resolves `$ref`, merges `allOf` and distributes `anyOf`/`oneOf`: a schema becomes a list of
/// plain alternatives (no combinators), each a JSON object.
class schema_normalizer {
public:
  schema_normalizer(const json& root, budget& b) : root_(root), budget_(b) {}
  /// The alternatives of `s` (empty: nothing matches).
  std::vector<json> alternatives(const json& s, int depth = 0);
  /// `alts` with their pending `not` and if / then / else (x-not, x-if) applied: exact where the
  /// narrowing is, a subset of the valid values otherwise; a compile_error when nothing is left
  /// of alternatives that had such keywords.
  std::vector<json> settle(std::vector<json> alts, int depth = 0);
  /// Alternatives covering every value `s` may match (oneOf, not and if not narrowed).
  std::vector<json> wide_alternatives(const json& s, int depth = 0);
  /// The schema a `$ref` names.
  const json& resolve(const std::string& ref) const;
  /// Merges two plain schemas (allOf of both; null when they contradict, or one is `false`).
  json merge(const json& a, const json& b) const;

  /// Whether no value matches both plain schemas, as far as types, listed values, bounds, counts
  /// and object keys prove it (false: they may overlap).
  bool disjoint(const json& a, const json& b) const;

private:
  /// oneOf: each branch's alternatives (`per`), narrowed to parts no other branch (`wide`, every
  /// value it may match) accepts; a branch with no such part is dropped.
  std::vector<json> one_of(const json& base, const std::vector<std::vector<json>>& per,
                           const std::vector<std::vector<json>>& wide) const;
  /// The parts of `x` (type by type, narrowed where needed) that match none of `others`.
  std::vector<json> apart(const json& base, const json& x, const std::vector<json>& others) const;
  /// Keywords that may leave a part of type `t` apart from `y`, least narrowing first.
  std::vector<json> narrowings(const std::string& t, const json& part, const json& y) const;
  /// Whether the value `v` provably fails the plain schema `y` (false when the validator cannot decide).
  bool fails(const json& v, const json& y) const;
  /// The strings `s`'s text keywords accept (no whitespace before), built once per key: nullptr
  /// for any string, or when it cannot be built (an automaton over its budget...).
  const byte_dfa* text_dfa(const json& s) const;
  /// `s` with its `$ref` and `allOf` merged in (what `disjoint` reads of items and properties;
  /// a superset of its values where a merge keeps one of two combinators).
  json flat(const json& s, int depth = 0) const;
  const json& root_;
  budget& budget_;
  /// Computing what a branch may match: a nested oneOf counts as anyOf (a superset), not narrowed.
  bool superset_ = false;
  /// oneOf, not and if nodes narrowed so far: a branch without one has the same alternatives
  /// either way.
  std::size_t narrowed_ = 0;
  mutable std::unique_ptr<json_validator> validator_;
  mutable std::map<std::string, std::optional<byte_dfa>> text_dfas_;
  mutable int depth_ = 0;  // of `disjoint` inside unions, items and properties
};

/// Builds the grammar: one rule per distinct schema.
class schema_builder {
public:
  schema_builder(const json& root, budget& b, json_options opts = {})
      : root_(root), norm_(root, b), gb_(b), ws_(opts.max_whitespace.value_or(rx::unbounded)) {}
  symbol value_rule(const json& s);
  std::shared_ptr<const grammar> finish(symbol root) { return gb_.finish(root); }
  symbol any_value();
  /// A lexeme of exactly `r` (no whitespace before it), shared by `key` (grammars that embed
  /// JSON values between fixed markup: forced tool calls).
  symbol exact(const std::string& key, rx r);
  grammar_builder& builder() { return gb_; }

private:
  void build_plain(rule_nfa& n, std::vector<rule_nfa::frag>& out, const json& s);
  rule_nfa::frag build_object(rule_nfa& n, const json& s);
  /// `s` with its propertyNames turned into properties, additionalProperties and a pattern.
  json apply_property_names(const json& s);
  rule_nfa::frag build_array(rule_nfa& n, const json& s);
  /// An array of distinct items of `items` (a finite set of values), `min` to `max` of them.
  rule_nfa::frag build_unique_array(rule_nfa& n, const json& items, std::size_t min, std::size_t max);
  symbol string_lexeme(const json& s);
  symbol number_lexeme(const json& s, bool integer);
  symbol punct(const std::string& text);
  /// A literal lexeme: `ws* pieces[0] ws* pieces[1] ...` (keys, punctuation, enum values),
  /// shared by `key`.
  symbol lex(const std::string& key, std::vector<std::string> pieces);
  /// `true` or `false`, after optional whitespace.
  symbol booleans();

  const json& root_;
  schema_normalizer norm_;
  grammar_builder gb_;
  /// The most whitespace bytes in a row before a token (rx::unbounded: any), built into every
  /// JSON lexeme but `exact` ones.
  std::uint32_t ws_;
  std::map<const json*, symbol> by_ptr_;
  std::unordered_map<std::string, symbol> by_text_;
  std::map<std::string, symbol> lexemes_;
  std::deque<json> owned_;
  static constexpr int max_depth = 256;
  int depth_ = 0;
  std::optional<symbol> any_;
};

} // namespace deepinfer::recipe::so::detail
