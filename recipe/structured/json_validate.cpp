#include "recipe/structured/json_validate.hpp"

#include "recipe/structured/json_lexemes.hpp"
#include "recipe/structured/json_schema_impl.hpp"
#include "recipe/structured/regex_parser.hpp"

#include <algorithm>
#include <cmath>

namespace deepinfer::recipe::so {

namespace {

using json = nlohmann::ordered_json;

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xC0) != 0x80;
  return n;
}

bool is_integral(const json& v) {
  return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
}

bool has_type(const json& v, const std::string& t) {
  if (t == "null")
    return v.is_null();
  if (t == "boolean")
    return v.is_boolean();
  if (t == "object")
    return v.is_object();
  if (t == "array")
    return v.is_array();
  if (t == "string")
    return v.is_string();
  if (t == "number")
    return v.is_number();
  if (t == "integer")
    return v.is_number() && is_integral(v);
  throw compile_error("unknown type '" + t + "'");
}

/// Whether `n` is within the count keywords `lo`..`hi` of `s` (minItems / maxItems...), each
/// optional.
bool counted_within(const json& s, const char* lo, const char* hi, std::size_t n) {
  const auto at_least = detail::count_keyword(s, lo), at_most = detail::count_keyword(s, hi);
  return (!at_least || static_cast<double>(n) >= *at_least) && (!at_most || static_cast<double>(n) <= *at_most);
}

} // namespace

bool json_validator::equal(const json& a, const json& b) {
  if (a.is_number() && b.is_number())
    return a.get<double>() == b.get<double>() &&
           (!a.is_number_integer() || !b.is_number_integer() || a.get<std::int64_t>() == b.get<std::int64_t>());
  if (a.type() != b.type())
    return false;
  if (a.is_array()) {
    if (a.size() != b.size())
      return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!equal(a[i], b[i]))
        return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size())
      return false;
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !equal(it.value(), b[it.key()]))
        return false;
    return true;
  }
  return a == b;
}

const json& json_validator::resolve(const std::string& ref) const { return detail::resolve_ref(root_, ref); }

template <class Make>
bool json_validator::matches(const std::string& key, const std::string& text, Make make) {
  auto it = automata_.find(key);
  if (it == automata_.end())
    it = automata_.emplace(key, make()).first;
  return it->second.matches(text);
}

bool json_validator::finds(const std::string& pattern, const std::string& spelled) {
  if (const auto split = split_leading_lookaheads(pattern)) {
    if (!finds(split->rest, spelled))
      return false;
    for (const auto& p : split->must)
      if (!finds(p, spelled))
        return false;
    for (const auto& p : split->must_not)
      if (finds(p, spelled))
        return false;
    return true;
  }
  return matches("/" + pattern, spelled,
                 [&] { return byte_dfa::of(json_lex::string_of(search_regex(pattern, spelling::json)), budget_); });
}

bool json_validator::valid(const json& v, const json& s, int depth) {
  budget_.tick();
  if (depth > 64)
    throw compile_error("$ref / allOf / not nest too deeply to validate (a reference cycle?)");
  if (s.is_boolean())
    return s.get<bool>();
  if (!s.is_object())
    throw compile_error("a schema must be an object or a boolean");
  for (const char* k : {"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"})
    if (s.contains(k))
      throw compile_error(std::string{"unsupported keyword '"} + k + "'");
  if (s.contains("$ref") && !valid(v, resolve(s["$ref"].get<std::string>()), depth + 1))
    return false;
  if (s.contains("type")) {
    const auto& t = s["type"];
    bool any = false;
    if (t.is_string())
      any = has_type(v, t.get<std::string>());
    else
      for (const auto& x : t)
        any = any || has_type(v, x.get<std::string>());
    if (!any)
      return false;
  }
  if (s.contains("enum") && std::none_of(s["enum"].begin(), s["enum"].end(), [&](const json& e) { return equal(v, e); }))
    return false;
  if (s.contains("const") && !equal(v, s["const"]))
    return false;
  if (v.is_number() && !valid_number(v, s))
    return false;
  if (v.is_string() && !valid_string(v, s))
    return false;
  if (v.is_array() && !valid_array(v, s, depth))
    return false;
  if (v.is_object() && !valid_object(v, s, depth))
    return false;
  if (s.contains("allOf"))
    for (const auto& x : s["allOf"])
      if (!valid(v, x, depth + 1))
        return false;
  if (s.contains("anyOf") &&
      std::none_of(s["anyOf"].begin(), s["anyOf"].end(), [&](const json& x) { return valid(v, x, depth + 1); }))
    return false;
  if (s.contains("oneOf") &&
      std::count_if(s["oneOf"].begin(), s["oneOf"].end(), [&](const json& x) { return valid(v, x, depth + 1); }) != 1)
    return false;
  if (s.contains("not") && valid(v, s["not"], depth + 1))
    return false;
  if (s.contains("if")) {
    const bool cond = valid(v, s["if"], depth + 1);
    const char* branch = cond ? "then" : "else";
    if (s.contains(branch) && !valid(v, s[branch], depth + 1))
      return false;
  }
  return true;
}

bool json_validator::valid_number(const json& v, const json& s) {
  const double x = v.get<double>();
  // The value against a bound, both as written (exact at any magnitude, as the compiler's
  // automata are): -1, 0, 1.
  const auto value = json_lex::decimal::parse(v.dump());
  auto against = [&](const char* k) -> std::optional<int> {
    if (!s.contains(k) || !s[k].is_number())
      return std::nullopt;
    if (const auto b = json_lex::decimal::parse(s[k].dump()); value && b)
      return json_lex::decimal::compare(*value, *b);
    const double b = s[k].get<double>();
    return x < b ? -1 : x > b ? 1 : 0;
  };
  // Draft 4: exclusiveMinimum / exclusiveMaximum as booleans make minimum / maximum strict.
  const bool min_x = s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean() && s["exclusiveMinimum"].get<bool>();
  const bool max_x = s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean() && s["exclusiveMaximum"].get<bool>();
  if (auto c = against("minimum"); c && (min_x ? *c <= 0 : *c < 0))
    return false;
  if (auto c = against("maximum"); c && (max_x ? *c >= 0 : *c > 0))
    return false;
  if (auto c = against("exclusiveMinimum"); c && *c <= 0)
    return false;
  if (auto c = against("exclusiveMaximum"); c && *c >= 0)
    return false;
  std::vector<json> multiples;
  if (s.contains("multipleOf"))
    multiples.push_back(s["multipleOf"]);
  if (s.contains("x-multipleOf"))
    for (const auto& m : s["x-multipleOf"])
      multiples.push_back(m);
  for (const auto& m : multiples) {
    const auto text = m.dump();
    if (!matches("%" + text, v.dump(), [&] {
          const auto d = json_lex::decimal::parse(text);
          if (!d)
            throw compile_error("'multipleOf' must be a number above 0");
          return detail::multiple_of_dfa(*d, budget_);
        }))
      return false;
  }
  if (s.contains("format") && s["format"] == "int32" && (x < -2147483648.0 || x > 2147483647.0 || !is_integral(v)))
    return false;
  return true;
}

bool json_validator::valid_string(const json& v, const json& s) {
  if (!counted_within(s, "minLength", "maxLength", code_points(v.get_ref<const std::string&>())))
    return false;
  std::vector<std::string> patterns;
  if (s.contains("pattern"))
    patterns.push_back(s["pattern"].get<std::string>());
  if (s.contains("x-patterns"))
    for (const auto& p : s["x-patterns"])
      patterns.push_back(p.get<std::string>());
  const auto spelled = v.dump();
  for (const auto& p : patterns)
    if (!finds(p, spelled))
      return false;
  if (s.contains("format") && s["format"].is_string()) {
    const auto name = s["format"].get<std::string>();
    // An unknown format is an annotation; a known one is the compiler's automaton (built once per
    // process), so the two agree on every string.
    if (const auto* f = detail::json_format_dfa(name, 0); f != nullptr && !f->matches(spelled))
      return false;
  }
  if (s.contains("x-not-strings"))  // a oneOf branch narrowed: none of the other branches' strings
    for (const auto& other : s["x-not-strings"]) {
      const bool listed = !other.contains("enum") || std::any_of(other["enum"].begin(), other["enum"].end(),
                                                                 [&](const json& e) { return equal(v, e); });
      if (listed && valid_string(v, other))
        return false;
    }
  return true;
}

bool json_validator::valid_array(const json& v, const json& s, int depth) {
  if (!counted_within(s, "minItems", "maxItems", v.size()))
    return false;
  // Items by position (prefixItems, or draft 4-2019's array `items`), then the rest, as
  // schema_builder::build_array reads them.
  const json* prefix = nullptr;
  const json* rest = nullptr;
  if (s.contains("prefixItems")) {
    prefix = &s["prefixItems"];
    if (s.contains("items"))
      rest = &s["items"];
  } else if (s.contains("items") && s["items"].is_array()) {
    prefix = &s["items"];
    if (s.contains("additionalItems"))
      rest = &s["additionalItems"];
  } else if (s.contains("items")) {
    rest = &s["items"];
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json* item = prefix && i < prefix->size() ? &(*prefix)[i] : rest;
    if (item && !valid(v[i], *item, depth + 1))
      return false;
  }
  if (s.value("uniqueItems", false))
    for (std::size_t i = 0; i < v.size(); ++i)
      for (std::size_t j = i + 1; j < v.size(); ++j)
        if (equal(v[i], v[j]))
          return false;
  if (s.contains("contains")) {
    const auto n = static_cast<std::size_t>(
        std::count_if(v.begin(), v.end(), [&](const json& x) { return valid(x, s["contains"], depth + 1); }));
    if (n < (s.contains("minContains") ? 0 : 1) || !counted_within(s, "minContains", "maxContains", n))
      return false;
  }
  return true;
}

bool json_validator::valid_object(const json& v, const json& s, int depth) {
  if (!counted_within(s, "minProperties", "maxProperties", v.size()))
    return false;
  if (s.contains("required"))
    for (const auto& k : s["required"])
      if (!v.contains(k.get<std::string>()))
        return false;
  const json empty = json::object();
  const auto& props = s.contains("properties") ? s["properties"] : empty;
  const auto& patterns = s.contains("patternProperties") ? s["patternProperties"] : empty;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const auto& key = it.key();
    bool seen = false;
    if (props.contains(key)) {
      seen = true;
      if (!valid(it.value(), props[key], depth + 1))
        return false;
    }
    for (auto p = patterns.begin(); p != patterns.end(); ++p) {
      if (finds(p.key(), json(key).dump())) {
        seen = true;
        if (!valid(it.value(), p.value(), depth + 1))
          return false;
      }
    }
    if (!seen && s.contains("additionalProperties") && !valid(it.value(), s["additionalProperties"], depth + 1))
      return false;
    if (s.contains("propertyNames") && !valid(json(key), s["propertyNames"], depth + 1))
      return false;
  }
  // dependentRequired / dependentSchemas, and draft 4-7's `dependencies` (either, per key).
  for (const char* k : {"dependentRequired", "dependentSchemas", "dependencies"}) {
    if (!s.contains(k))
      continue;
    for (auto it = s[k].begin(); it != s[k].end(); ++it) {
      if (!v.contains(it.key()))
        continue;
      if (it.value().is_array()) {
        for (const auto& r : it.value())
          if (!v.contains(r.get<std::string>()))
            return false;
      } else if (!valid(v, it.value(), depth + 1)) {
        return false;
      }
    }
  }
  return true;
}

} // namespace deepinfer::recipe::so
