// allOf: the conjunction of two plain schemas, keyword by keyword (json_schema_normalize.cpp
// expands the combinators around it).
#include "recipe/structured/json_schema_impl.hpp"

#include <algorithm>
#include <set>

namespace deepinfer::recipe::so::detail {

json schema_normalizer::merge(const json& a, const json& b) const {
  // null: a merge that found a contradiction; `false` matches nothing, `true` adds nothing.
  if (a.is_null() || b.is_null() || is_false(a) || is_false(b))
    return nullptr;
  if (a.is_boolean())
    return b;
  if (b.is_boolean())
    return a;
  if (!a.is_object() || !b.is_object())
    throw compile_error("a schema must be an object or a boolean");
  // Patterns on one side find keys the other side may not declare. The conjunction is both
  // sides' properties and patterns (a declared key takes the schemas of the patterns that find
  // it, as the object builder writes it) where the other side takes any key it does not
  // declare; an undeclared key a pattern finds would need that side's additionalProperties too.
  const json t = true;
  const auto addl_of = [&](const json& s) -> const json& {
    return s.contains("additionalProperties") ? s["additionalProperties"] : t;
  };
  const auto has_patterns = [](const json& s) { return s.contains("patternProperties") && !s["patternProperties"].empty(); };
  const auto closed = [&](const json& s) { return !is_true(addl_of(s)) || s.contains("propertyNames"); };
  if ((has_patterns(a) && closed(b)) || (has_patterns(b) && closed(a)))
    throw compile_error("allOf combines patternProperties with another part's additionalProperties or propertyNames "
                        "(unsupported)");
  // What side `s` asks of a key it does not declare: its patterns' schemas (the builder adds
  // them), else its additionalProperties.
  const auto undeclared = [&](const json& s, const std::string& key) -> const json& {
    if (has_patterns(s))
      for (auto it = s["patternProperties"].begin(); it != s["patternProperties"].end(); ++it)
        if (pattern_finds(it.key(), key, budget_))
          return t;
    return addl_of(s);
  };
  json r = a;
  const json* bp = &b;
  json b2;
  // Arrays: `items` beside `prefixItems` means the items after the prefix, alone it means all.
  if (a.contains("prefixItems") || b.contains("prefixItems")) {
    auto tuple = [](const json& s) { return s.contains("prefixItems") ? s["prefixItems"] : json::array(); };
    auto rest = [](const json& s) { return s.contains("items") ? s["items"] : json(true); };
    if ((a.contains("items") && a["items"].is_array()) || (b.contains("items") && b["items"].is_array()))
      throw compile_error("allOf combines prefixItems with array-form items (unsupported)");
    const auto ta = tuple(a), tb = tuple(b);
    const auto ra = rest(a), rb = rest(b);
    json prefix = json::array();
    for (std::size_t i = 0; i < std::max(ta.size(), tb.size()); ++i)
      prefix.push_back(conj(i < ta.size() ? ta[i] : ra, i < tb.size() ? tb[i] : rb));
    b2 = b;
    b2.erase("prefixItems");
    b2.erase("items");
    r.erase("prefixItems");
    r.erase("items");
    r["prefixItems"] = prefix;
    if (auto x = conj(ra, rb); !is_true(x))
      r["items"] = x;
    bp = &b2;
  }
  for (auto it = bp->begin(); it != bp->end(); ++it) {
    const auto& k = it.key();
    const auto& v = it.value();
    if (!r.contains(k)) {
      r[k] = v;
      continue;
    }
    if (r[k] == v || k == "properties" || k == "additionalProperties")
      continue;
    if (k == "patternProperties") {  // both hold: a pattern on both sides takes both schemas
      if (!v.is_object() || !r[k].is_object())
        throw compile_error("'patternProperties' must be an object");
      for (auto p = v.begin(); p != v.end(); ++p)
        r[k][p.key()] = r[k].contains(p.key()) ? conj(r[k][p.key()], p.value()) : p.value();
      continue;
    }
    if (k == "type") {
      auto ta = types_of(r), tb = types_of(b);
      std::set<std::string> t;
      for (auto& x : ta)
        if (tb.contains(x))
          t.insert(x);
      if (t.empty())
        return nullptr;
      r[k] = type_json(t);
    } else if (k == "required") {
      for (auto& x : v)
        if (std::find(r[k].begin(), r[k].end(), x) == r[k].end())
          r[k].push_back(x);
    } else if (k == "enum") {
      json keep = json::array();
      for (auto& x : r[k])
        if (std::find(v.begin(), v.end(), x) != v.end())
          keep.push_back(x);
      if (keep.empty())
        return nullptr;
      r[k] = keep;
    } else if (k == "const") {
      return nullptr;  // different constants
    } else if (k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems" ||
               k == "minProperties") {
      if (v.is_number() && r[k].is_number() && v > r[k])
        r[k] = v;
    } else if (k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems" ||
               k == "maxProperties") {
      if (v.is_number() && r[k].is_number() && v < r[k])
        r[k] = v;
    } else if (k == "uniqueItems") {
      if (v.is_boolean() && r[k].is_boolean())
        r[k] = v.get<bool>() || r[k].get<bool>();  // both hold: unique when either asks it
      else
        throw compile_error("'uniqueItems' must be a boolean");
    } else if (k == "pattern") {
      r["x-patterns"].push_back(v);
    } else if (k == "multipleOf") {
      r["x-multipleOf"].push_back(v);  // both hold (a number may pass one and not the other)
    } else if (k == "dependentRequired" || k == "dependencies") {
      // Both hold: per key, the union of what each side requires with it.
      if (!v.is_object() || !r[k].is_object())
        throw compile_error("'" + k + "' must be an object");
      for (auto it = v.begin(); it != v.end(); ++it) {
        auto& mine = r[k][it.key()];
        if (mine.is_null()) {
          mine = it.value();
          continue;
        }
        if (!mine.is_array() || !it.value().is_array())
          throw compile_error("allOf combines two schema-valued '" + k + "' (unsupported)");
        for (const auto& x : it.value())
          if (std::find(mine.begin(), mine.end(), x) == mine.end())
            mine.push_back(x);
      }
    } else if (k == "x-patterns" || k == "x-multipleOf" || k == "x-not-strings" || k == "x-not" || k == "x-if") {
      for (auto& x : v)  // lists from merges below: all of them hold
        r[k].push_back(x);
    } else if (k == "items" && r[k].is_object() && v.is_object()) {
      r[k] = conj(r[k], v);
    } else if (k == "not" || k == "format" || k == "items" || k == "prefixItems" || k == "additionalItems" ||
               k == "propertyNames") {
      throw compile_error("allOf combines two different '" + k + "' (unsupported)");
    } else if (k == "title" || k == "description" || k == "default" || k == "examples" || k == "$comment") {
      // annotations: keep the first
    } else {
      r[k] = v;  // unsupported keywords are reported when the value is built
    }
  }
  // Object keywords: a key not in one side's properties must satisfy its additionalProperties.
  if (a.contains("properties") || b.contains("properties") || a.contains("additionalProperties") ||
      b.contains("additionalProperties")) {
    const json empty = json::object();
    const auto& pa = a.contains("properties") ? a["properties"] : empty;
    const auto& pb = b.contains("properties") ? b["properties"] : empty;
    const auto& aa = addl_of(a);
    const auto& ab = addl_of(b);
    json props = json::object();
    for (auto it = pa.begin(); it != pa.end(); ++it)
      props[it.key()] = conj(it.value(), pb.contains(it.key()) ? pb[it.key()] : undeclared(b, it.key()));
    for (auto it = pb.begin(); it != pb.end(); ++it)
      if (!props.contains(it.key()))
        props[it.key()] = conj(undeclared(a, it.key()), it.value());
    if (!props.empty())
      r["properties"] = props;
    auto addl = conj(aa, ab);
    if (is_true(addl))
      r.erase("additionalProperties");
    else
      r["additionalProperties"] = addl;
  }
  return r;
}

} // namespace deepinfer::recipe::so::detail
