// The shape of a JSON Schema's keywords, checked once before it compiles: a keyword whose value
// has the wrong JSON type (`"type": 3`, `"required": "a"`, `"allOf": {}`) is a clear error
// naming the keyword and where it is, instead of an exception from deep inside the compiler.
#include "recipe/protocol/api_error.hpp"
#include "recipe/structured/json_schema_impl.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deepinfer::recipe::so::detail {

namespace {

enum class shape { schema, schema_map, schema_list, schema_or_list, strings, list, text, number, number_or_bool,
                   boolean, types, dependencies, string_lists };

struct keyword_shape {
  std::string_view keyword;
  shape is;
};

// The keywords whose value the compiler reads; annotations and unknown keywords are left alone.
constexpr keyword_shape shapes[] = {
    {"properties", shape::schema_map}, {"patternProperties", shape::schema_map}, {"$defs", shape::schema_map},
    {"definitions", shape::schema_map}, {"dependentSchemas", shape::schema_map},
    {"additionalProperties", shape::schema}, {"additionalItems", shape::schema}, {"not", shape::schema},
    {"if", shape::schema}, {"then", shape::schema}, {"else", shape::schema}, {"contains", shape::schema},
    {"propertyNames", shape::schema}, {"unevaluatedProperties", shape::schema}, {"unevaluatedItems", shape::schema},
    {"items", shape::schema_or_list}, {"prefixItems", shape::schema_list}, {"allOf", shape::schema_list},
    {"anyOf", shape::schema_list}, {"oneOf", shape::schema_list}, {"required", shape::strings},
    {"enum", shape::list}, {"pattern", shape::text}, {"format", shape::text}, {"$ref", shape::text},
    {"minimum", shape::number}, {"maximum", shape::number}, {"multipleOf", shape::number},
    {"exclusiveMinimum", shape::number_or_bool}, {"exclusiveMaximum", shape::number_or_bool},
    {"minLength", shape::number}, {"maxLength", shape::number}, {"minItems", shape::number},
    {"maxItems", shape::number}, {"minProperties", shape::number}, {"maxProperties", shape::number},
    {"minContains", shape::number}, {"maxContains", shape::number}, {"uniqueItems", shape::boolean},
    {"type", shape::types}, {"dependencies", shape::dependencies}, {"dependentRequired", shape::string_lists},
};

const char* what(shape s) {
  switch (s) {
  case shape::schema: return "a schema (an object or a boolean)";
  case shape::schema_map: return "an object whose values are schemas";
  case shape::schema_list: return "an array of schemas";
  case shape::schema_or_list: return "a schema or an array of schemas";
  case shape::strings: return "an array of strings";
  case shape::list: return "an array";
  case shape::text: return "a string";
  case shape::number: return "a number";
  case shape::number_or_bool: return "a number (or, in draft 4, a boolean)";
  case shape::boolean: return "a boolean";
  case shape::types: return "a type name or an array of type names";
  case shape::dependencies: return "an object whose values are arrays of strings or schemas";
  case shape::string_lists: return "an object whose values are arrays of strings";
  }
  return "";
}

/// `v` as JSON, cut to about 60 bytes at a character boundary (the message travels in JSON).
std::string shown(const json& v) {
  return shown_value(v.dump(), 60);
}

/// `~` and `/` escaped as a JSON Pointer token.
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key)
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

bool is_schema(const json& v) { return v.is_object() || v.is_boolean(); }
bool all_strings(const json& v) {
  return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); });
}
bool schema_or_strings(const json& v) { return is_schema(v) || all_strings(v); }

/// What each member of a map or list shape must be (null for the other shapes).
using member_rule = bool (*)(const json&);
member_rule member_of(shape s) {
  switch (s) {
  case shape::schema_map:
  case shape::schema_list:
  case shape::schema_or_list: return is_schema;
  case shape::dependencies: return schema_or_strings;
  case shape::string_lists: return all_strings;
  default: return nullptr;
  }
}
bool is_map(shape s) { return s == shape::schema_map || s == shape::dependencies || s == shape::string_lists; }

/// The members of a map or list shape's value with their JSON Pointer tokens (none when `v` is
/// not that container, or is the one schema a schema_or_list may also be).
std::vector<std::pair<std::string, const json*>> members(shape s, const json& v) {
  std::vector<std::pair<std::string, const json*>> out;
  if (!member_of(s) || (is_map(s) ? !v.is_object() : !v.is_array()))
    return out;
  std::size_t i = 0;
  for (auto m = v.begin(); m != v.end(); ++m, ++i)
    out.emplace_back(v.is_object() ? pointer_token(m.key()) : std::to_string(i), &*m);
  return out;
}

bool fits(shape s, const json& v) {
  if (const auto member = member_of(s)) {
    if (s == shape::schema_or_list && is_schema(v))
      return true;
    return (is_map(s) ? v.is_object() : v.is_array()) && std::all_of(v.begin(), v.end(), member);
  }
  switch (s) {
  case shape::schema: return is_schema(v);
  case shape::strings: return all_strings(v);
  case shape::list: return v.is_array();
  case shape::text: return v.is_string();
  case shape::number: return v.is_number();
  case shape::number_or_bool: return v.is_number() || v.is_boolean();
  case shape::boolean: return v.is_boolean();
  case shape::types: return v.is_string() || all_strings(v);
  default: return false;
  }
}

struct walk {
  const json& root;
  std::set<const json*> seen;  // schemas checked (a $ref's target once, cycles included)
};

void check(walk& w, const json& s, const std::string& at, int depth) {
  if (!s.is_object() || !w.seen.insert(&s).second)
    return;
  if (depth > 256)
    throw compile_error("the schema nests deeper than 256 levels (unsupported)");
  for (const auto& [keyword, is] : shapes) {
    const auto it = s.find(std::string{keyword});
    if (it == s.end())
      continue;
    const auto here = at + "/" + pointer_token(std::string{keyword});
    const auto inside = members(is, *it);
    if (!fits(is, *it)) {
      // A map or list of the right kind: name the member that is wrong.
      std::string where = at.empty() ? "the root" : at;
      const json* bad = &*it;
      for (const auto& [token, m] : inside)
        if (!member_of(is)(*m)) {
          where = here + "/" + token;
          bad = m;
          break;
        }
      throw compile_error("invalid schema: '" + std::string{keyword} + "' must be " + what(is) + ": at " + where +
                          " is " + shown(*bad));
    }
    // Into the schemas the keyword holds (a dependency's list of keys is none: not an object).
    for (const auto& [token, m] : inside)
      check(w, *m, here + "/" + token, depth + 1);
    if (is == shape::schema || (is == shape::schema_or_list && is_schema(*it)))
      check(w, *it, here, depth + 1);
  }
  // The schema a local $ref names, wherever it sits (under `components`, say): the builder reads it.
  if (const auto ref = s.find("$ref"); ref != s.end() && ref->is_string() && ref->get<std::string>().starts_with("#")) {
    const json* target = nullptr;
    try {
      target = &resolve_ref(w.root, ref->get<std::string>());
    } catch (const compile_error&) {
      return;  // the builder says it does not resolve
    }
    check(w, *target, ref->get<std::string>().substr(1), depth + 1);
  }
}

} // namespace

void check_schema_shape(const json& schema) {
  if (!is_schema(schema))
    throw compile_error("invalid schema: a schema must be an object or a boolean, not " + shown(schema));
  walk w{schema, {}};
  check(w, schema, "", 0);
}

} // namespace deepinfer::recipe::so::detail
