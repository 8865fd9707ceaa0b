#include "recipe/structured/json_schema_impl.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

namespace deepinfer::recipe::so::detail {

json conj(const json& x, const json& y) {
  if (is_true(x))
    return y;
  if (is_true(y) || x == y)
    return x;
  if (is_false(x) || is_false(y))
    return false;
  return json{{"allOf", json::array({x, y})}};
}

namespace {

// "If the object has key `key`, it also matches `then`" (a dependency) as an if / then / else
// triple of x-if: the `if` names the object type so that other types pass untouched.
json dependency_if(const std::string& key, json then) {
  return json::array({json{{"type", "object"}, {"required", json::array({key})}}, std::move(then), json(true)});
}

// An object that may hold keys it does not declare decides dependentRequired in the members'
// order only between declared keys; a dependency that names another key ("if a is present, so
// is r") becomes if {object, required a} then {required r}, settled like an `if`.
void free_dependencies_to_ifs(json& a) {
  const bool open = !a.contains("additionalProperties") || !is_false(a["additionalProperties"]) ||
                    a.contains("patternProperties");
  if (!open)
    return;  // closed: an undeclared key never appears, which the object builder decides
  const auto declared = [&](const json& k) {
    return k.is_string() && a.contains("properties") && a["properties"].is_object() &&
           a["properties"].contains(k.get<std::string>());
  };
  json ifs = json::array();  // added to `a` after the loops, which read inside it
  for (const char* k : {"dependentRequired", "dependencies"}) {
    if (!a.contains(k) || !a[k].is_object())
      continue;
    json keep = json::object();
    for (auto it = a[k].begin(); it != a[k].end(); ++it) {
      const auto& needs = it.value();
      if (!needs.is_array() || (declared(it.key()) && std::all_of(needs.begin(), needs.end(), declared))) {
        keep[it.key()] = needs;
        continue;
      }
      ifs.push_back(dependency_if(it.key(), json{{"required", needs}}));
    }
    if (keep.empty())
      a.erase(k);
    else
      a[k] = std::move(keep);
  }
  for (auto& c : ifs)
    a["x-if"].push_back(std::move(c));
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

} // namespace

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

std::optional<json> values_of(const json& s) {
  if (!s.is_object())
    return std::nullopt;
  if (s.contains("const"))
    return json::array({s["const"]});
  if (s.contains("enum") && s["enum"].is_array())
    return s["enum"];
  if (s.contains("allOf") && s["allOf"].is_array()) {  // conj() writes property conjunctions so
    std::optional<json> r;
    for (const auto& m : s["allOf"])
      if (auto v = values_of(m)) {
        if (!r) {
          r = *v;
          continue;
        }
        json keep = json::array();
        for (const auto& x : *r)
          if (std::find(v->begin(), v->end(), x) != v->end())
            keep.push_back(x);
        r = std::move(keep);
      }
    return r;
  }
  return std::nullopt;
}

namespace {

/// The subschema whose `$anchor` is `name` (2019-09 and later) or whose `$id` (draft 6-7) or `id`
/// (draft 4) is `#name`; the walk skips the keywords whose values are data, not schemas.
const json* find_anchor(const json& s, const std::string& name, int depth = 0) {
  if (depth > 64)
    return nullptr;
  if (s.is_object()) {
    auto is = [&](const char* key, const std::string& want) {
      auto it = s.find(key);
      return it != s.end() && it->is_string() && it->get<std::string>() == want;
    };
    if (is("$anchor", name) || is("$id", "#" + name) || is("id", "#" + name))
      return &s;
    for (auto it = s.begin(); it != s.end(); ++it) {
      const auto& k = it.key();
      if (k == "enum" || k == "const" || k == "default" || k == "examples" || k == "example")
        continue;
      if (const json* hit = find_anchor(it.value(), name, depth + 1))
        return hit;
    }
  } else if (s.is_array()) {
    for (const auto& x : s)
      if (const json* hit = find_anchor(x, name, depth + 1))
        return hit;
  }
  return nullptr;
}

/// The root's own URI (`$id`, or draft 4's `id`) without a trailing `#`; empty when it has none.
std::string root_uri(const json& root) {
  if (!root.is_object())
    return {};
  for (const char* key : {"$id", "id"})
    if (auto it = root.find(key); it != root.end() && it->is_string()) {
      std::string uri = it->get<std::string>();
      if (!uri.empty() && uri.back() == '#')
        uri.pop_back();
      if (!uri.empty() && uri[0] != '#')
        return uri;
    }
  return {};
}

} // namespace

const json& resolve_ref(const json& root, const std::string& given) {
  std::string ref = given;
  // A reference through the root's own URI (`"$id": "https://x/s.json"`, `"$ref":
  // "https://x/s.json#/definitions/a"`) is local.
  if (const auto uri = root_uri(root); !ref.empty() && ref[0] != '#' && !uri.empty() && ref.rfind(uri, 0) == 0 &&
                                       (ref.size() == uri.size() || ref[uri.size()] == '#'))
    ref = ref.size() == uri.size() ? "#" : ref.substr(uri.size());
  if (ref.empty() || ref[0] != '#')
    throw compile_error("$ref '" + given + "' is not local (only '#...' references and the root's own $id are supported)");
  std::string ptr;
  for (std::size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] == '%' && i + 2 < ref.size() && std::isxdigit(static_cast<unsigned char>(ref[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(ref[i + 2]))) {
      ptr.push_back(static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else
      ptr.push_back(ref[i]);
  }
  if (!ptr.empty() && ptr[0] != '/') {
    if (const json* hit = find_anchor(root, ptr))
      return *hit;
    throw compile_error("$ref '" + given + "' names an anchor that no $anchor (or $id '#" + ptr + "') defines");
  }
  try {
    return root.at(json::json_pointer(ptr));
  } catch (const std::exception&) {
    throw compile_error("$ref '" + given + "' does not resolve");
  }
}

const json& schema_normalizer::resolve(const std::string& ref) const { return resolve_ref(root_, ref); }

std::vector<json> schema_normalizer::alternatives(const json& s, int depth) {
  budget_.tick();
  if (depth > 48)
    throw compile_error("$ref / allOf / anyOf nest too deeply (a reference cycle without a value between?)");
  if (s.is_boolean())
    return s.get<bool>() ? std::vector<json>{json::object()} : std::vector<json>{};
  if (!s.is_object())
    throw compile_error("a schema must be an object or a boolean");
  json base = json::object();
  // Schema-valued dependencies (dependentSchemas, draft 4-7's `dependencies` with a schema): "if
  // the object has key a, it also matches S" is if {object, required a} then S, compiled as the
  // if below. Array-valued ones stay (the object builder decides them in the members' order).
  json dependent_ifs = json::array();
  for (auto it = s.begin(); it != s.end(); ++it) {
    const auto& k = it.key();
    if (k == "allOf" || k == "anyOf" || k == "oneOf" || k == "$ref" || k == "definitions" || k == "$defs" ||
        k == "not" || k == "if" || k == "then" || k == "else")
      continue;
    if (k == "dependentSchemas" || k == "dependencies") {
      if (!it.value().is_object())
        throw compile_error("'" + k + "' must be an object");
      json lists = json::object();
      for (auto d = it.value().begin(); d != it.value().end(); ++d) {
        if (k == "dependencies" && d.value().is_array())
          lists[d.key()] = d.value();
        else if (!is_true(d.value()))
          dependent_ifs.push_back(dependency_if(d.key(), d.value()));
      }
      if (!lists.empty())
        base[k] = std::move(lists);
      continue;
    }
    // An unknown format is an annotation (JSON Schema 2020-12 §7.2.3); OpenAPI's int32 bounds
    // integers (json_schema_numbers).
    if (k == "format" && it.value().is_string() && it.value() != "int32" &&
        !json_lex::known_format(it.value().get<std::string>()))
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
    std::vector<std::vector<json>> per, wide;
    for (auto& sub : s["oneOf"]) {
      const auto seen = narrowed_;
      per.push_back(alternatives(sub, depth + 1));
      if (superset_ || seen == narrowed_) {
        wide.push_back(per.back());  // nothing inside was narrowed: the same values
        continue;
      }
      wide.push_back(wide_alternatives(sub, depth + 1));
    }
    if (superset_) {  // what the oneOf may match: any branch
      std::vector<json> branches;
      for (auto& p : wide)
        for (auto& a : p)
          branches.push_back(std::move(a));
      cross(branches);
    } else {
      ++narrowed_;
      cross(one_of(base, per, wide));
    }
  }
  // `not` and if / then / else wait in the alternatives (x-not, x-if) until every keyword beside
  // them is merged in (`settle`): narrowing a part apart from what they exclude needs its
  // siblings' properties and values. What a schema may match (superset_) leaves them out.
  if (!superset_ && (s.contains("not") || s.contains("if") || !dependent_ifs.empty())) {
    ++narrowed_;
    json pending = json::object();
    if (s.contains("not"))
      pending["x-not"] = json::array({s["not"]});
    if (s.contains("if"))
      dependent_ifs.insert(dependent_ifs.begin(), json::array({s["if"], s.contains("then") ? s["then"] : json(true),
                                                               s.contains("else") ? s["else"] : json(true)}));
    if (!dependent_ifs.empty())
      pending["x-if"] = std::move(dependent_ifs);
    cross({pending});
  }
  return alts;
}

std::vector<json> schema_normalizer::settle(std::vector<json> alts, int depth) {
  if (depth > 8)
    throw compile_error("not / if nest too deeply");
  std::vector<json> out;
  bool lost = false;  // a part that may have valid values dropped (not proven outside)
  auto narrow = [&](const json& p, const std::vector<json>& wide, std::vector<json>& into) {
    auto kept = apart(json::object(), p, wide);
    lost = lost || (kept.empty() && !disjoint(p, p));
    for (auto& q : kept)
      into.push_back(std::move(q));
  };
  for (auto& a : alts) {
    free_dependencies_to_ifs(a);
    if (!a.contains("x-not") && !a.contains("x-if")) {
      out.push_back(std::move(a));
      continue;
    }
    const json nots = a.contains("x-not") ? a["x-not"] : json::array();
    const json ifs = a.contains("x-if") ? a["x-if"] : json::array();
    a.erase("x-not");
    a.erase("x-if");
    if (values_of(a)) {  // listed values: the validator decides each against the keywords as written
      json all = json::array();
      for (const auto& n : nots)
        all.push_back(json{{"not", n}});
      for (const auto& c : ifs)
        all.push_back(json{{"if", c[0]}, {"then", c[1]}, {"else", c[2]}});
      a["allOf"] = std::move(all);
      out.push_back(std::move(a));
      continue;
    }
    std::vector<json> parts{std::move(a)};
    // if / then / else: (if and then) or (else, apart from all `if` may match).
    for (const auto& c : ifs) {
      std::vector<json> next;
      const auto wide = wide_alternatives(c[0]);
      for (const auto& p : parts) {
        for (auto& x : alternatives(json{{"allOf", json::array({p, c[0], c[1]})}}))
          next.push_back(std::move(x));
        for (auto& x : alternatives(json{{"allOf", json::array({p, c[2]})}}))
          narrow(x, wide, next);
      }
      parts = settle(std::move(next), depth + 1);
    }
    // not: each part narrowed apart from all the negated schema may match.
    for (const auto& n : nots) {
      if (is_true(n)) {
        parts.clear();  // not {} admits nothing
        break;
      }
      const auto wide = wide_alternatives(n);
      std::vector<json> next;
      for (const auto& p : parts)
        narrow(p, wide, next);
      parts = std::move(next);
    }
    for (auto& p : parts)
      out.push_back(std::move(p));
    if (out.size() > 64)
      throw compile_error("too many alternatives after expanding not / if");
  }
  if (out.empty() && lost && depth == 0)
    throw compile_error("unsupported keyword 'not' or 'if' (no part of the schema is provably outside what it excludes)");
  return out;
}

std::vector<json> schema_normalizer::wide_alternatives(const json& s, int depth) {
  const bool was = std::exchange(superset_, true);
  try {
    auto r = alternatives(s, depth);
    superset_ = was;
    return r;
  } catch (...) {
    superset_ = was;
    throw;
  }
}

} // namespace deepinfer::recipe::so::detail
