#include "recipe/structured/json_schema.hpp"
#include "recipe/structured/json_schema_impl.hpp"
#include "recipe/structured/json_validate.hpp"
#include "recipe/structured/regex_parser.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <set>

namespace deepinfer::recipe::so::detail {

std::optional<double> count_keyword(const json& s, const char* k) {
  if (!s.contains(k))
    return std::nullopt;
  const auto& v = s[k];
  if (!v.is_number() || v.get<double>() < 0)
    throw compile_error(std::string{"'"} + k + "' must be a non-negative number");
  return v.get<double>();
}

namespace {

// Standard validation keywords this compiler does not enforce: an error, never ignored.
const std::set<std::string>& unsupported() {
  static const std::set<std::string> s{
    "contains",
    "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
    "$recursiveRef", "x-patterns-unsupported"};
  return s;
}

bool trivially_true(const std::string& k, const json& v) {
  if (k == "minProperties" || k == "minContains")
    return v.is_number() && v.get<double>() <= 0;
  if (k == "multipleOf")
    return false;
  if (k == "dependencies" || k == "dependentRequired" || k == "dependentSchemas")
    return v.is_object() && v.empty();
  return false;
}

std::uint32_t count(const json& s, const char* k, std::uint32_t dflt) {
  const auto d = count_keyword(s, k);
  if (!d)
    return dflt;
  return *d > 1e9 ? rx::unbounded - 1 : static_cast<std::uint32_t>(std::ceil(*d));
}


} // namespace


const byte_dfa& json_constant_dfa(json_constant c, std::uint32_t max_ws) {
  // One set per whitespace bound in use (a server has one or two: its default and compact).
  static std::mutex mutex;
  static std::map<std::uint32_t, std::array<byte_dfa, 6>> built;
  std::lock_guard lock{mutex};
  auto it = built.find(max_ws);
  if (it == built.end()) {
    auto b = budget::unbounded();  // JSON's own lexemes: fixed and small
    using namespace json_lex;
    const auto ws = max_ws;
    it = built
             .emplace(max_ws, std::array<byte_dfa, 6>{
                                  byte_dfa::of(lead(any_string(), ws), b), byte_dfa::of(lead(any_number(), ws), b),
                                  byte_dfa::of(lead(integer(std::nullopt, std::nullopt), ws), b),
                                  byte_dfa::of(lead(rx::seq({string_len(0, rx::unbounded), json_ws(ws), rx::lit(":")}), ws), b),
                                  byte_dfa::of(string_char(), b),
                                  byte_dfa::of(lead(integer(-2147483648LL, 2147483647LL), ws), b)})
             .first;
  }
  return it->second[static_cast<std::size_t>(c)];
}

const byte_dfa* json_format_dfa(const std::string& name, std::uint32_t max_ws) {
  // The supported formats are a fixed few (json_lex::format), so this never grows past them
  // (times the whitespace bounds in use).
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::uint32_t>, byte_dfa, std::less<>> built;
  std::lock_guard lock{mutex};
  if (auto it = built.find(std::pair{name, max_ws}); it != built.end())
    return &it->second;
  auto f = json_lex::format(name);
  if (!f)
    return nullptr;
  auto b = budget::unbounded();  // JSON's own lexemes: fixed and small
  auto d = byte_dfa::of(json_lex::lead(json_lex::string_of(std::move(*f)), max_ws), b);
  if (auto limit = json_lex::format_limit(name))
    d = byte_dfa::intersect(d, byte_dfa::of(json_lex::lead(json_lex::string_of(std::move(*limit)), max_ws), b), b);
  return &built.emplace(std::pair{name, max_ws}, std::move(d)).first->second;
}

symbol schema_builder::lex(const std::string& key, std::vector<std::string> pieces) {
  if (auto it = lexemes_.find(key); it != lexemes_.end())
    return it->second;
  auto d = byte_dfa::spaced_literal(pieces, ws_);
  if (!d) {
    std::vector<rx> parts;
    for (auto& p : pieces)
      parts.push_back(json_ws(ws_)), parts.push_back(rx::lit(p));
    d = byte_dfa::of(rx::seq(std::move(parts)), gb_.bud());
  }
  auto s = gb_.lexeme(std::move(*d), lexeme_shape::literal);
  lexemes_.emplace(key, s);
  return s;
}

symbol schema_builder::punct(const std::string& text) { return lex("p:" + text, {text}); }

symbol schema_builder::booleans() {
  if (auto it = lexemes_.find("bool"); it != lexemes_.end())
    return it->second;
  auto s = gb_.lexeme(byte_dfa::of(json_lex::lead(rx::alt({rx::lit("true"), rx::lit("false")}), ws_), gb_.bud()),
                      lexeme_shape::literal);
  lexemes_.emplace("bool", s);
  return s;
}

symbol schema_builder::exact(const std::string& key, rx r) {
  const auto k = "x:" + key;
  if (auto it = lexemes_.find(k); it != lexemes_.end())
    return it->second;
  auto s = gb_.lexeme(std::move(r));
  lexemes_.emplace(k, s);
  return s;
}

namespace {
// The nodes of `v`, counted up to `limit` + 1 at most.
std::size_t nodes_up_to(const json& v, std::size_t limit) {
  std::size_t n = 1;
  if (v.is_structured())
    for (auto& x : v) {
      if (n > limit)
        break;
      n += nodes_up_to(x, limit - n);
    }
  return n;
}
} // namespace

symbol schema_builder::any_value() { return value_rule(json::object()); }

symbol schema_builder::value_rule(const json& s) {
  // Each level of nesting is a few frames of this recursion (and a dump of what is below):
  // a schema nested past this depth is refused rather than allowed to exhaust the stack.
  if (++depth_ > max_depth) {
    throw compile_error("schema nested deeper than " + std::to_string(max_depth) + " levels (unsupported)");
  }
  struct leave {
    int& d;
    ~leave() { --d; }
  } guard{depth_};
  // Schemas with few keywords are shared by their text: leaves ({"type": "string"}, an enum)
  // recur under many addresses, inlined copies of one definition too, and a `$ref` must map
  // to one rule or a recursive schema would expand forever (the normalizer hands out fresh
  // copies). A subtree past `text_nodes` nodes is shared by address: its text, at every level
  // of nesting, made deep schemas quadratic.
  constexpr std::size_t text_nodes = 4096;
  std::string text;
  if (s.is_boolean() || (s.size() < 8 && (s.contains("$ref") || nodes_up_to(s, text_nodes) <= text_nodes))) {
    text = s.dump();
    if (auto it = by_text_.find(text); it != by_text_.end())
      return it->second;
  } else if (auto it = by_ptr_.find(&s); it != by_ptr_.end()) {
    return it->second;
  }
  auto r = gb_.declare();
  if (!text.empty())
    by_text_.emplace(text, r);
  else
    by_ptr_.emplace(&s, r);
  auto alts = norm_.settle(norm_.alternatives(s));
  rule_nfa n;
  std::vector<rule_nfa::frag> outs;
  for (auto& a : alts) {
    owned_.push_back(std::move(a));
    build_plain(n, outs, owned_.back());
  }
  auto f = outs.empty() ? rule_nfa::frag{n.add(), n.add()} : n.alt(outs);
  gb_.define(r, std::move(n), f);
  return r;
}

void schema_builder::build_plain(rule_nfa& n, std::vector<rule_nfa::frag>& out, const json& s) {
  // 1. enum / const: the listed values that pass the whole schema, each in its compact spelling.
  // A finite set is filtered by the validator, so every keyword it decides (not, if, uniqueItems,
  // dependencies, pattern, format...) is exact here, whatever the lexemes could express.
  if (s.contains("enum") || s.contains("const")) {
    const json values = s.contains("const") ? json::array({s["const"]}) : s["enum"];
    if (!values.is_array())
      throw compile_error("'enum' must be an array");
    json_validator check{root_, gb_.bud()};
    for (const auto& v : values)
      if (check.valid(v, s))
        out.push_back(n.sym(lex("v:" + v.dump(), {v.dump()})));
    return;
  }
  for (auto it = s.begin(); it != s.end(); ++it)
    if (unsupported().contains(it.key()) && !trivially_true(it.key(), it.value()))
      throw compile_error("unsupported keyword '" + it.key() + "'");
  std::set<std::string> types{"null", "boolean", "object", "array", "string", "number"};
  if (s.contains("type")) {
    types.clear();
    const auto& t = s["type"];
    if (t.is_string())
      types.insert(t.get<std::string>());
    else if (t.is_array())
      for (auto& x : t)
        types.insert(x.get<std::string>());
    else
      throw compile_error("'type' must be a string or an array");
    for (auto& x : types)
      if (x != "null" && x != "boolean" && x != "object" && x != "array" && x != "string" && x != "number" && x != "integer")
        throw compile_error("unknown type '" + x + "'");
    if (types.contains("number"))
      types.erase("integer");
  }
  // 2. one branch per type.
  for (auto& t : types) {
    if (t == "null")
      out.push_back(n.sym(punct("null")));
    else if (t == "boolean")
      out.push_back(n.sym(booleans()));
    else if (t == "string")
      out.push_back(n.sym(string_lexeme(s)));
    else if (t == "number" || t == "integer")
      out.push_back(n.sym(number_lexeme(s, t == "integer")));
    else if (t == "object")
      out.push_back(build_object(n, s));
    else if (t == "array")
      out.push_back(build_array(n, s));
  }
}

std::string string_text_key(const json& s) {
  std::string key = s.contains("format") && s["format"].is_string() ? s["format"].get<std::string>() : "";
  if (s.contains("pattern"))
    key += "\x1f" + s["pattern"].get<std::string>();
  if (s.contains("x-patterns"))
    for (auto& p : s["x-patterns"])
      key += "\x1f" + p.get<std::string>();
  if (s.contains("x-not-strings"))
    key += "\x1e" + s["x-not-strings"].dump();
  if (s.contains("enum"))
    key += "\x1d" + s["enum"].dump();
  return key;
}

/// The JSON strings (after `ws` whitespace) in which `pattern` finds a match. Lookaheads that
/// open the pattern are automata the rest is intersected with or stripped of.
static byte_dfa pattern_dfa(const std::string& pattern, std::uint32_t ws, budget& b) {
  auto of = [&](const std::string& p) {
    return byte_dfa::of(json_lex::lead(json_lex::string_of(search_regex(p, spelling::json)), ws), b);
  };
  const auto split = split_leading_lookaheads(pattern);
  if (!split)
    return of(pattern);
  byte_dfa d = of(split->rest);
  for (const auto& p : split->must)
    d = byte_dfa::intersect(d, of(p), b);
  for (const auto& p : split->must_not)
    d = byte_dfa::minus(d, of(p), b);
  return d;
}

std::optional<byte_dfa> string_text_dfa(const json& s, std::uint32_t ws, budget& b) {
  std::vector<byte_dfa> parts;
  if (s.contains("pattern"))
    parts.push_back(pattern_dfa(s["pattern"].get<std::string>(), ws, b));
  if (s.contains("x-patterns"))
    for (auto& p : s["x-patterns"])
      parts.push_back(pattern_dfa(p.get<std::string>(), ws, b));
  if (s.contains("format") && s["format"].is_string()) {
    const auto fmt = s["format"].get<std::string>();
    if (const auto* f = json_format_dfa(fmt, ws))  // another name is an annotation
      parts.push_back(*f);
  }
  const bool without = s.contains("x-not-strings") && !s["x-not-strings"].empty();
  if (s.contains("enum")) {  // strings listed (an x-not-strings entry): each spelled one way
    std::vector<rx> listed;
    for (const auto& v : s["enum"])
      if (v.is_string())
        listed.push_back(json_lex::string_of(rx::lit(v.get_ref<const std::string&>(), spelling::json)));
    parts.push_back(listed.empty() ? byte_dfa{} : byte_dfa::of(json_lex::lead(rx::alt(std::move(listed)), ws), b));
  }
  if (parts.empty() && !without)
    return std::nullopt;
  if (parts.empty())  // one spelling per string: what `without` removes is removed in every spelling
    parts.push_back(byte_dfa::of(json_lex::lead(json_lex::string_len(0, rx::unbounded), ws), b));
  byte_dfa d = std::move(parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i)
    d = byte_dfa::intersect(d, parts[i], b);
  if (without)
    for (const auto& other : s["x-not-strings"])
      if (auto o = string_text_dfa(other, ws, b))
        d = byte_dfa::minus(d, *o, b);
  return d;
}

symbol schema_builder::string_lexeme(const json& s) {
  // A count is one automaton state per character: past 4096 characters a string is written to
  // at most 4096 (every output still valid; APIs' `maxLength: 65535` text fields were refused),
  // while a minimum past it cannot be met that way and is refused.
  constexpr std::uint32_t longest = 4096;
  const auto min = count(s, "minLength", 0);
  auto max = count(s, "maxLength", rx::unbounded);
  if (min > longest)
    throw compile_error("minLength above 4096 (unsupported)");
  if (max != rx::unbounded && max > longest)
    max = longest;
  std::string key = "s:" + std::to_string(min) + ":" + std::to_string(max) + ":" + string_text_key(s);
  if (auto it = lexemes_.find(key); it != lexemes_.end())
    return it->second;
  auto& b = gb_.bud();
  auto t = string_text_dfa(s, ws_, b);
  // A pattern or format under a count is their product, about the pattern's states times the
  // count: where that would pass the automaton cap, the string is written to fewer characters
  // (an email of at most 1024 is written to at most ~500; every output still valid), but never
  // to fewer than `shortest_cap`: a text field cut shorter is refused instead.
  constexpr std::uint32_t shortest_cap = 256;
  const auto floor = std::max(min, shortest_cap);
  if (t && max != rx::unbounded) {
    const auto fits = b.max_states() / (2 * static_cast<std::size_t>(std::max(t->size(), 1)));
    if (max > fits && fits >= floor)
      max = static_cast<std::uint32_t>(fits);
  }
  std::optional<byte_dfa> d;
  for (;;) {
    try {
      if (min > 0 || max != rx::unbounded)
        d = byte_dfa::counted(json_constant_dfa(json_constant::string_char), '"', '"', min, max, b, ws_);
      if (t)
        d = d ? byte_dfa::intersect(*d, *t, b) : std::move(*t);
      break;
    } catch (const compile_error& e) {  // the estimate was short: halve the count, down to the floor
      const bool too_large = std::string_view{e.what()}.starts_with("automaton too large");
      if (!too_large || !t || max == rx::unbounded || max / 2 < floor)
        throw;
      max /= 2;
    }
  }
  if (!d)
    d = json_constant_dfa(json_constant::any_string, ws_);
  auto sym = gb_.lexeme(std::move(*d));
  lexemes_.emplace(key, sym);
  return sym;
}


} // namespace deepinfer::recipe::so::detail
