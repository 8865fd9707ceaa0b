// Which plain schemas provably share no value, and how a schema is narrowed to a part that none
// of some others match: a oneOf branch apart from the other branches, a schema apart from its
// `not`, the `else` apart from the `if`.

#include "recipe/structured/json_schema_impl.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>

namespace deepinfer::recipe::so::detail {

namespace {

std::set<std::string> required_of(const json& s) {
  std::set<std::string> r;
  if (s.contains("required") && s["required"].is_array())
    for (const auto& x : s["required"])
      if (x.is_string())
        r.insert(x.get<std::string>());
  return r;
}

const json& properties_of(const json& s) {
  static const json empty = json::object();
  return s.contains("properties") && s["properties"].is_object() ? s["properties"] : empty;
}

bool closed(const json& s) {
  return s.contains("additionalProperties") && is_false(s["additionalProperties"]) &&
         (!s.contains("patternProperties") || s["patternProperties"].empty());
}

/// Whether `s` (an object schema) forbids the key `k`.
bool forbids(const json& s, const std::string& k) {
  const auto& p = properties_of(s);
  return p.contains(k) ? is_false(p[k]) : closed(s);
}

struct bound {
  double at;
  bool exclusive;
};

/// The tighter of `s`'s inclusive and exclusive bound on one side (`low`: the lower one).
std::optional<bound> side(const json& s, const char* inclusive, const char* exclusive, bool low) {
  std::optional<bound> r;
  if (s.contains(inclusive) && s[inclusive].is_number())
    r = bound{s[inclusive].get<double>(), false};
  if (s.contains(exclusive) && s[exclusive].is_number()) {
    const double v = s[exclusive].get<double>();
    if (!r || (low ? v >= r->at : v <= r->at))
      r = bound{v, true};
  }
  return r;
}

std::optional<bound> lower(const json& s) { return side(s, "minimum", "exclusiveMinimum", true); }
std::optional<bound> upper(const json& s) { return side(s, "maximum", "exclusiveMaximum", false); }

/// Every number `a` admits lies below every number `b` admits. Doubles keep the order of the
/// decimals they round (never invert it), so `<` proves it; equal ends need one to be exclusive.
bool below(const json& a, const json& b) {
  const auto hi = upper(a);
  const auto lo = lower(b);
  return hi && lo && (hi->at < lo->at || (hi->at == lo->at && (hi->exclusive || lo->exclusive)));
}

/// The counts (`lo` / `hi` keyword: minLength / maxLength...) of `a` and `b` cannot agree.
bool counts_apart(const json& a, const json& b, const char* lo, const char* hi) {
  auto count = [](const json& s, const char* k, double none) {
    return s.contains(k) && s[k].is_number() ? s[k].get<double>() : none;
  };
  constexpr double inf = std::numeric_limits<double>::infinity();
  return count(a, hi, inf) < count(b, lo, 0) || count(b, hi, inf) < count(a, lo, 0);
}

bool share_a_value(const json& x, const json& y) {
  return std::any_of(x.begin(), x.end(), [&](const json& u) { return std::find(y.begin(), y.end(), u) != y.end(); });
}

/// `apart(x, y)`: whether two property schemas share no value.
template <class Apart>
bool objects_apart(const json& a, const json& b, Apart apart) {
  const auto ra = required_of(a), rb = required_of(b);
  const auto &pa = properties_of(a), &pb = properties_of(b);
  // A property one requires whose values the other's property schema never takes.
  for (auto [r, p, q] : {std::tuple{&ra, &pa, &pb}, std::tuple{&rb, &pb, &pa}})
    for (const auto& k : *r)
      if (p->contains(k) && q->contains(k) && apart((*p)[k], (*q)[k]))
        return true;
  // One requires a key the other forbids. (A pattern of patternProperties may let the key in:
  // not closed then.)
  for (const auto& k : rb)
    if (forbids(a, k))
      return true;
  for (const auto& k : ra)
    if (forbids(b, k))
      return true;
  return counts_apart(a, b, "minProperties", "maxProperties");
}

} // namespace

json schema_normalizer::flat(const json& s, int depth) const {
  if (depth > 8 || !s.is_object())
    return s;
  try {
    json r = s;
    if (s.contains("$ref") && s["$ref"].is_string()) {
      r.erase("$ref");
      r = merge(flat(resolve(s["$ref"].get<std::string>()), depth + 1), r);
    }
    if (s.contains("allOf") && s["allOf"].is_array()) {
      r.erase("allOf");
      for (const auto& m : s["allOf"])
        r = merge(r, flat(m, depth + 1));
    }
    return r.is_null() ? json(false) : r;
  } catch (const compile_error& e) {
    if (std::string_view{e.what()} == "compile timeout")
      throw;
    return json::object();  // cannot say: anything
  }
}

const byte_dfa* schema_normalizer::text_dfa(const json& s) const {
  auto key = string_text_key(s);
  if (key.empty())
    return nullptr;
  auto it = text_dfas_.find(key);
  if (it == text_dfas_.end()) {
    std::optional<byte_dfa> d;
    try {
      d = string_text_dfa(s, 0, budget_);
    } catch (const compile_error& e) {
      if (std::string_view{e.what()} == "compile timeout")
        throw;  // the compile's error; anything else (a format, a size) is "cannot say"
    }
    it = text_dfas_.emplace(std::move(key), std::move(d)).first;
  }
  return it->second ? &*it->second : nullptr;
}

bool schema_normalizer::fails(const json& v, const json& y) const {
  if (!validator_)
    validator_ = std::make_unique<json_validator>(root_, budget_);
  try {
    return !validator_->valid(v, y);
  } catch (const compile_error& e) {
    if (std::string_view{e.what()} == "compile timeout")
      throw;
    return false;  // undecided: not proven
  }
}

std::vector<json> schema_normalizer::narrowings(const std::string& t, const json& part, const json& y) const {
  std::vector<json> out;
  // Listed values: keep those `y` rejects.
  const auto vx = values_of(part), vy = values_of(y);
  const json own = vx ? *vx : t == "boolean" ? json::array({true, false}) : json();
  if (!own.is_null()) {
    json keep = json::array();
    for (const auto& v : own)
      if (fails(v, y))
        keep.push_back(v);
    if (!keep.empty() && keep.size() < own.size())
      out.push_back(json{{"enum", keep}});
  }
  auto count_complement = [&](const char* lo, const char* hi) {
    if (y.contains(hi) && y[hi].is_number_unsigned())
      out.push_back(json{{lo, y[hi].get<std::uint64_t>() + 1}});
    if (y.contains(lo) && y[lo].is_number_unsigned() && y[lo].get<std::uint64_t>() > 0)
      out.push_back(json{{hi, y[lo].get<std::uint64_t>() - 1}});
  };
  if (t == "object") {
    const auto rx = required_of(part);
    const auto &px = properties_of(part), &py = properties_of(y);
    for (const auto& k : required_of(y))  // a key `y` requires, forbidden here
      if (!rx.contains(k))
        out.push_back(json{{"properties", {{k, false}}}});
    for (auto it = px.begin(); it != px.end(); ++it) {  // a key with values `y` does not list there
      const auto& k = it.key();
      if (!py.contains(k))
        continue;
      const auto fx = flat(it.value()), fy = flat(py[k]);
      if (!rx.contains(k) && !is_false(fx) && disjoint(fx, fy)) {  // require it: its values fail `y`'s
        out.push_back(json{{"required", {k}}});
        continue;
      }
      auto vk = values_of(fx), vyk = values_of(fy);
      if (!vk || !vyk)
        continue;
      json keep = json::array();
      for (const auto& v : *vk)
        if (std::find(vyk->begin(), vyk->end(), v) == vyk->end())
          keep.push_back(v);
      if (!keep.empty())
        out.push_back(json{{"required", {k}}, {"properties", {{k, {{"enum", keep}}}}}});
    }
    for (auto it = px.begin(); it != px.end(); ++it)  // a key this one allows and `y` forbids
      if (!is_false(it.value()) && !rx.contains(it.key()) && forbids(y, it.key()))
        out.push_back(json{{"required", {it.key()}}});
    count_complement("minProperties", "maxProperties");
  } else if (t == "number" || t == "integer") {
    if (auto hi = upper(y))
      out.push_back(json{{hi->exclusive ? "minimum" : "exclusiveMinimum",
                          y[hi->exclusive ? "exclusiveMaximum" : "maximum"]}});
    if (auto lo = lower(y))
      out.push_back(json{{lo->exclusive ? "maximum" : "exclusiveMaximum",
                          y[lo->exclusive ? "exclusiveMinimum" : "minimum"]}});
  } else if (t == "string") {
    count_complement("minLength", "maxLength");
    // Strings `y`'s text keywords reject (one spelling each, so every spelling of the others goes).
    if (!vx && text_dfa(y) != nullptr) {
      json text = json::object();
      for (const char* k : {"pattern", "x-patterns", "format"})
        if (y.contains(k))
          text[k] = y[k];
      if (vy) {
        text["enum"] = json::array();
        for (const auto& v : *vy)
          if (v.is_string())
            text["enum"].push_back(v);
      }
      out.push_back(json{{"x-not-strings", json::array({text})}});
    }
  } else if (t == "array") {
    count_complement("minItems", "maxItems");
    out.push_back(json{{"minItems", 1}});  // apart when the items are
  }
  return out;
}

bool schema_normalizer::disjoint(const json& a, const json& b) const {
  if (a.is_null() || b.is_null())
    return true;
  budget_.tick();
  if (depth_ > 16)
    return false;
  struct deeper {
    int& d;
    explicit deeper(int& x) : d(++x) {}
    ~deeper() { --d; }
  } in{depth_};
  // A union (what flat() leaves of an anyOf / oneOf inside items or properties): apart when
  // every branch, with the keywords beside it, is.
  for (const auto& [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}})
    for (const char* k : {"anyOf", "oneOf"})
      if (x->contains(k) && (*x)[k].is_array()) {
        json rest = *x;
        rest.erase(k);
        const json& other = *y;  // (a lambda may not capture a structured binding before C++20's P1091 in clang)
        return std::all_of((*x)[k].begin(), (*x)[k].end(), [&](const json& branch) {
          try {
            return disjoint(merge(rest, flat(branch)), other);
          } catch (const compile_error& e) {
            if (std::string_view{e.what()} == "compile timeout")
              throw;
            return false;
          }
        });
      }
  // Strings whose text keywords accept no string in common.
  auto texts_apart = [&](const json& x, const json& y) {
    const auto *dx = text_dfa(x), *dy = text_dfa(y);
    return dx != nullptr && dy != nullptr && byte_dfa::intersect(*dx, *dy, budget_).empty();
  };
  // Arrays, one of them never empty, whose items (one schema for all) share no value.
  auto items_apart = [&](const json& x, const json& y) {
    auto nonempty = [](const json& s) { return s.contains("minItems") && s["minItems"].is_number() && s["minItems"].get<double>() >= 1; };
    auto items = [](const json& s) -> const json* {
      return s.contains("items") && s["items"].is_object() && !s.contains("prefixItems") ? &s["items"] : nullptr;
    };
    const json *ix = items(x), *iy = items(y);
    return (nonempty(x) || nonempty(y)) && ix && iy && disjoint(flat(*ix), flat(*iy));
  };
  auto ta = types_of(a), tb = types_of(b);
  const auto va = values_of(a), vb = values_of(b);
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
  // Listed values narrow the types to theirs.
  for (auto [t, v] : {std::pair{&ta, &va}, std::pair{&tb, &vb}})
    if (*v) {
      std::set<std::string> listed;
      for (const auto& x : **v)
        listed.insert(value_type(x));
      std::erase_if(*t, [&](auto& x) { return !listed.contains(x) && !(x == "number" && listed.contains("integer")); });
    }
  if (va && vb && !share_a_value(*va, *vb))
    return true;
  // Every listed value fails the other schema (the validator decides each).
  if ((va && std::all_of(va->begin(), va->end(), [&](const json& v) { return fails(v, b); })) ||
      (vb && std::all_of(vb->begin(), vb->end(), [&](const json& v) { return fails(v, a); })))
    return true;
  // Apart when apart in every type both admit.
  for (const auto& t : ta) {
    if (!tb.contains(t) || (t == "integer" && ta.contains("number") && tb.contains("number")))
      continue;
    const bool apart = (t == "number" || t == "integer")
                           ? below(a, b) || below(b, a)
                       : t == "string" ? counts_apart(a, b, "minLength", "maxLength") || texts_apart(a, b)
                       : t == "array"  ? counts_apart(a, b, "minItems", "maxItems") || items_apart(a, b)
                       : t == "object" ? objects_apart(a, b, [&](const json& x, const json& y) { return disjoint(flat(x), flat(y)); })
                                       : false;
    if (!apart)
      return false;
  }
  return true;
}

std::vector<json> schema_normalizer::apart(const json& base, const json& x, const std::vector<json>& others) const {
  const auto mx = merge(base, x);
  if (mx.is_null())
    return {};
  if (std::all_of(others.begin(), others.end(), [&](const json& y) { return disjoint(mx, y); }))
    return {x};
  // Type by type: a type another branch accepts whole is dropped, the others narrowed until
  // they are apart from every other branch as written.
  auto types = types_of(mx);
  if (types.contains("number"))
    types.erase("integer");
  std::vector<json> parts;
  std::set<std::string> whole;
  for (const auto& t : types) {
    budget_.tick();
    auto part = merge(x, json{{"type", t}});
    auto mp = merge(base, part);
    // (A part disjoint from itself is provably empty: bounds or counts that cannot agree.)
    bool ok = !mp.is_null() && !disjoint(mp, mp), narrowed = false;
    for (std::size_t i = 0; ok && i < others.size(); ++i) {
      if (disjoint(mp, others[i]))
        continue;
      ok = false;
      for (const auto& n : narrowings(t, mp, others[i])) {
        auto q = merge(part, n);
        auto mq = merge(base, q);
        if (!mq.is_null() && !disjoint(mq, mq) && disjoint(mq, others[i])) {
          part = std::move(q);
          mp = std::move(mq);
          ok = narrowed = true;
          break;
        }
      }
    }
    if (ok && narrowed)
      parts.push_back(std::move(part));
    else if (ok)
      whole.insert(t);
  }
  if (!whole.empty())
    parts.push_back(merge(x, json{{"type", type_json(whole)}}));
  return parts;
}

std::vector<json> schema_normalizer::one_of(const json& base, const std::vector<std::vector<json>>& per,
                                            const std::vector<std::vector<json>>& wide) const {
  // Output matches exactly one branch as written: each part of a branch is checked against
  // every other branch's alternatives, un-narrowed (`wide`), never against their narrowed parts.
  std::vector<json> out;
  bool any = false;
  for (std::size_t i = 0; i < per.size(); ++i) {
    std::vector<json> others;
    for (std::size_t j = 0; j < wide.size(); ++j)
      if (j != i)
        for (const auto& y : wide[j])
          if (auto my = merge(base, y); !my.is_null())
            others.push_back(std::move(my));
    for (const auto& x : per[i]) {
      any = any || !merge(base, x).is_null();
      for (auto& p : apart(base, x, others))
        out.push_back(std::move(p));
    }
  }
  if (out.empty() && any)
    for (std::size_t i = 0; i < per.size(); ++i)
      for (std::size_t j = i + 1; j < per.size(); ++j)
        for (const auto& x : per[i])
          for (const auto& y : wide[j])
            if (!disjoint(merge(base, x), merge(base, y)))
              throw compile_error("oneOf branches " + std::to_string(i) + " and " + std::to_string(j) +
                                  " may both match, and no part of any branch is provably matched by it alone");
  return out;
}

} // namespace deepinfer::recipe::so::detail
