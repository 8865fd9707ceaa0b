#pragma once

// Internal to the JSON Schema compiler: normalization (json_schema_normalize.cpp) and grammar
// construction (json_schema_build.cpp).

#include "recipe/structured/grammar.hpp"
#include "recipe/structured/json_lexemes.hpp"
#include "recipe/structured/json_schema.hpp"

#include <nlohmann/json.hpp>

#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace deepinfer::recipe::so::detail {

using json = nlohmann::ordered_json;

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

/// Numbers (no exponent; after JSON whitespace, any amount) that are multiples of `m` (> 0):
/// a compile_error for a zero, negative or too fine / too large one.
byte_dfa multiple_of_dfa(const json_lex::decimal& m, budget& b);

/// Resolves `$ref`, merges `allOf` and distributes `anyOf`/`oneOf`: a schema becomes a list of
/// plain alternatives (no combinators), each a JSON object.
class schema_normalizer {
public:
  schema_normalizer(const json& root, budget& b) : root_(root), budget_(b) {}
  /// The alternatives of `s` (empty: nothing matches).
  std::vector<json> alternatives(const json& s, int depth = 0);
  /// The schema a `$ref` names.
  const json& resolve(const std::string& ref) const;
  /// Merges two plain schemas (allOf of both).
  json merge(const json& a, const json& b) const;

private:
  bool disjoint(const json& a, const json& b) const;
  const json& root_;
  budget& budget_;
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
  rule_nfa::frag build_array(rule_nfa& n, const json& s);
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
