#include "recipe/structured/json_schema_impl.hpp"

#include <algorithm>
#include <set>

namespace deepinfer::recipe::so::detail {

namespace {

bool is_true(const json& s) { return (s.is_boolean() && s.get<bool>()) || (s.is_object() && s.empty()); }
bool is_false(const json& s) { return s.is_boolean() && !s.get<bool>(); }

json conj(const json& x, const json& y) {
  if (is_true(x))
    return y;
  if (is_true(y) || x == y)
    return x;
  if (is_false(x) || is_false(y))
    return false;
  return json{{"allOf", json::array({x, y})}};
}

std::set<std::string> types_of(const json& s) {
  static const std::set<std::string> all{"null", "boolean", "object", "array", "string", "number", "integer"};
  if (!s.contains("type"))
    return all;
  std::set<std::string> t;
  const auto& v = s["type"];
  if (v.is_string())
    t.insert(v.get<std::string>());
  else if (v.is_array())
    for (auto& x : v)
      if (x.is_string())
        t.insert(x.get<std::string>());
  if (t.contains("number"))
    t.insert("integer");
  return t;
}

json type_json(const std::set<std::string>& t) {
  std::set<std::string> u = t;
  if (u.contains("number"))
    u.erase("integer");
  if (u.size() == 1)
    return *u.begin();
  json a = json::array();
  for (auto& x : u)
    a.push_back(x);
  return a;
}

// Draft 4 spells exclusive bounds as booleans beside minimum / maximum.
void draft4_bounds(json& s) {
  for (auto [ex, bound] : {std::pair{"exclusiveMinimum", "minimum"}, std::pair{"exclusiveMaximum", "maximum"}}) {
    if (!s.contains(ex) || !s[ex].is_boolean())
      continue;
    const bool on = s[ex].get<bool>();
    s.erase(ex);
    if (on && s.contains(bound)) {
      s[ex] = s[bound];
      s.erase(bound);
    }
  }
}

std::optional<json> values_of(const json& s) {
  if (s.contains("const"))
    return json::array({s["const"]});
  if (s.contains("enum") && s["enum"].is_array())
    return s["enum"];
  return std::nullopt;
}

} // namespace

const json& schema_normalizer::resolve(const std::string& ref) const {
  if (ref.empty() || ref[0] != '#')
    throw compile_error("$ref '" + ref + "' is not local (only '#...' references are supported)");
  std::string ptr;
  for (std::size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] == '%' && i + 2 < ref.size()) {
      ptr.push_back(static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else
      ptr.push_back(ref[i]);
  }
  if (!ptr.empty() && ptr[0] != '/')
    throw compile_error("$ref '" + ref + "' names an anchor (unsupported)");
  try {
    return root_.at(json::json_pointer(ptr));
  } catch (const std::exception&) {
    throw compile_error("$ref '" + ref + "' does not resolve");
  }
}

std::vector<json> schema_normalizer::alternatives(const json& s, int depth) {
  budget_.tick();
  if (depth > 48)
    throw compile_error("$ref / allOf / anyOf nest too deeply (a reference cycle without a value between?)");
  if (s.is_boolean())
    return s.get<bool>() ? std::vector<json>{json::object()} : std::vector<json>{};
  if (!s.is_object())
    throw compile_error("a schema must be an object or a boolean");
  json base = json::object();
  for (auto it = s.begin(); it != s.end(); ++it) {
    const auto& k = it.key();
    if (k == "allOf" || k == "anyOf" || k == "oneOf" || k == "$ref" || k == "definitions" || k == "$defs")
      continue;
    base[k] = it.value();
  }
  draft4_bounds(base);
  std::vector<json> alts{base};
  auto cross = [&](const std::vector<json>& with) {
    std::vector<json> out;
    for (auto& a : alts)
      for (auto& b : with) {
        auto m = merge(a, b);
        if (!m.is_null())
          out.push_back(std::move(m));
        if (out.size() > 64)
          throw compile_error("too many alternatives after expanding anyOf/oneOf/allOf");
      }
    alts = std::move(out);
  };
  if (s.contains("$ref")) {
    if (!s["$ref"].is_string())
      throw compile_error("$ref must be a string");
    cross(alternatives(resolve(s["$ref"].get<std::string>()), depth + 1));
  }
  if (s.contains("allOf"))
    for (auto& sub : s["allOf"])
      cross(alternatives(sub, depth + 1));
  if (s.contains("anyOf")) {
    std::vector<json> branches;
    for (auto& sub : s["anyOf"])
      for (auto& a : alternatives(sub, depth + 1))
        branches.push_back(std::move(a));
    cross(branches);
  }
  if (s.contains("oneOf")) {
    std::vector<std::vector<json>> per;
    for (auto& sub : s["oneOf"])
      per.push_back(alternatives(sub, depth + 1));
    std::vector<json> branches;
    // Objects that may match two branches are kept apart where each branch requires a key the
    // other does not: each forbids the other's key, so its outputs fail the other branch as
    // written (`oneOf: [{required: [a]}, {required: [b]}]` is "a or b, not both"). Forbidding
    // only narrows a branch, so what was disjoint stays so; the outputs are a subset of the
    // valid ones, each matching exactly one branch. One-sided (`[a]` and `[a, b]`) is refused:
    // an output of the wider branch would match the narrower one too.
    auto required_only_by = [](const json& x, const json& y) -> std::optional<std::string> {
      if (!x.is_object() || !x.contains("required"))
        return std::nullopt;
      for (const auto& k : x["required"])
        if (!y.contains("required") || std::find(y["required"].begin(), y["required"].end(), k) == y["required"].end())
          return k.get<std::string>();
      return std::nullopt;
    };
    auto forbid = [&](json& x, const std::string& k) { x = merge(x, json{{"properties", {{k, false}}}}); };
    for (std::size_t i = 0; i < per.size(); ++i)
      for (std::size_t j = i + 1; j < per.size(); ++j)
        for (auto& a : per[i])
          for (auto& b : per[j]) {
            const auto ma = merge(base, a), mb = merge(base, b);
            if (disjoint(ma, mb))
              continue;
            const auto k = required_only_by(mb, ma), k2 = required_only_by(ma, mb);
            if (!k || !k2)
              throw compile_error("oneOf branches " + std::to_string(i) + " and " + std::to_string(j) +
                                  " may both match (only provably disjoint oneOf is supported)");
            forbid(a, *k);
            forbid(b, *k2);
          }
    for (auto& p : per)
      for (auto& a : p)
        branches.push_back(std::move(a));
    cross(branches);
  }
  return alts;
}

bool schema_normalizer::disjoint(const json& a, const json& b) const {
  if (a.is_null() || b.is_null())
    return true;
  auto ta = types_of(a), tb = types_of(b);
  auto va = values_of(a), vb = values_of(b);
  auto value_type = [](const json& v) -> std::string {
    switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::number_float: return "number";
    default: return "integer";
    }
  };
  if (va) {
    std::set<std::string> t;
    for (auto& v : *va)
      t.insert(value_type(v));
    std::erase_if(ta, [&](auto& x) { return !t.contains(x) && !(x == "number" && t.contains("integer")); });
  }
  if (vb) {
    std::set<std::string> t;
    for (auto& v : *vb)
      t.insert(value_type(v));
    std::erase_if(tb, [&](auto& x) { return !t.contains(x) && !(x == "number" && t.contains("integer")); });
  }
  std::set<std::string> common;
  for (auto& x : ta)
    if (tb.contains(x))
      common.insert(x);
  if (common.empty())
    return true;
  if (va && vb) {
    bool any = false;
    for (auto& x : *va)
      for (auto& y : *vb)
        any = any || x == y;
    if (!any)
      return true;
  }
  if (common == std::set<std::string>{"object"}) {
    auto req = [](const json& s) {
      std::set<std::string> r;
      if (s.contains("required"))
        for (auto& x : s["required"])
          r.insert(x.get<std::string>());
      return r;
    };
    auto ra = req(a), rb = req(b);
    const json empty = json::object();
    const auto& pa = a.contains("properties") ? a["properties"] : empty;
    const auto& pb = b.contains("properties") ? b["properties"] : empty;
    // A required property whose values cannot agree.
    for (auto& k : ra)
      if (rb.contains(k) && pa.contains(k) && pb.contains(k)) {
        auto x = values_of(pa[k]), y = values_of(pb[k]);
        if (x && y) {
          bool any = false;
          for (auto& u : *x)
            for (auto& v : *y)
              any = any || u == v;
          if (!any)
            return true;
        }
      }
    // One requires what the other forbids.
    // (A pattern of patternProperties may let the key in: not closed then.)
    auto closed = [](const json& s) {
      return s.contains("additionalProperties") && is_false(s["additionalProperties"]) &&
             (!s.contains("patternProperties") || s["patternProperties"].empty());
    };
    for (auto& k : rb)
      if ((closed(a) && !pa.contains(k)) || (pa.contains(k) && is_false(pa[k])))
        return true;
    for (auto& k : ra)
      if ((closed(b) && !pb.contains(k)) || (pb.contains(k) && is_false(pb[k])))
        return true;
  }
  return false;
}

json schema_normalizer::merge(const json& a, const json& b) const {
  if (a.is_null() || b.is_null())
    return nullptr;
  // A pattern's keys meet the other side's properties and additionalProperties: their
  // conjunction is not written here.
  auto object_keywords = [](const json& s) {
    return s.contains("properties") || s.contains("additionalProperties") || s.contains("patternProperties");
  };
  const auto has_patterns = [](const json& s) { return s.contains("patternProperties") && !s["patternProperties"].empty(); };
  if ((has_patterns(a) && object_keywords(b)) || (has_patterns(b) && object_keywords(a)))
    throw compile_error("allOf combines patternProperties with other object keywords (unsupported)");
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
    } else if (k == "x-patterns" || k == "x-multipleOf") {
      for (auto& x : v)  // lists from merges below: all of them hold
        r[k].push_back(x);
    } else if (k == "items" && r[k].is_object() && v.is_object()) {
      r[k] = conj(r[k], v);
    } else if (k == "not" || k == "format" || k == "items" || k == "prefixItems" || k == "additionalItems") {
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
    const json t = true;
    const auto& aa = a.contains("additionalProperties") ? a["additionalProperties"] : t;
    const auto& ab = b.contains("additionalProperties") ? b["additionalProperties"] : t;
    json props = json::object();
    for (auto it = pa.begin(); it != pa.end(); ++it)
      props[it.key()] = conj(it.value(), pb.contains(it.key()) ? pb[it.key()] : ab);
    for (auto it = pb.begin(); it != pb.end(); ++it)
      if (!props.contains(it.key()))
        props[it.key()] = conj(aa, it.value());
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
