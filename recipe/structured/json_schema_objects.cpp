#include "recipe/structured/json_schema.hpp"
#include "recipe/structured/json_schema_impl.hpp"
#include "recipe/structured/regex_parser.hpp"

#include <algorithm>
#include <map>

namespace deepinfer::recipe::so {
namespace detail {

namespace {
/// A declared key's lexeme pieces: the key spelled canonically, then `:` (whitespace around).
std::vector<std::string> key_pieces(const std::string& key) { return {json(key).dump(), ":"}; }
/// Keys whose text a `patternProperties` pattern finds (ECMA-262 search: unanchored unless the
/// pattern anchors itself), spelled canonically, then `:`.
rx pattern_key_rx(const std::string& pattern, std::uint32_t max_ws) {
  return rx::seq({json_lex::string_of(search_regex(pattern, spelling::json)), json_ws(max_ws), rx::lit(":")});
}

/// What dependentRequired (and `dependencies` with arrays: "if a is present, so are r...") asks
/// of each declared member. Members are decided in the schema's order, so each rule is one flag:
/// a written before r (r may not be skipped then), or r skipped before a (a may not be written).
struct member_rule {
  int present_sets = 0, absent_sets = 0;                  // flags this member's choice sets
  int present_forbidden_by = 0, absent_forbidden_by = 0;  // flags that forbid writing / skipping it
  bool never = false;                                     // depends on a key that cannot appear
};
struct dependency_plan {
  int bits = 0;
  std::vector<member_rule> at;
};

/// The plan for `keys` (declared members, `required` updated: a required member's dependencies
/// are required too); nullopt when a required member depends on a key that cannot appear.
/// `open`: other keys may appear (a dependency on one is refused: it is not decided in order),
/// except the `declared` keys that are not members (declared false: they never appear).
std::optional<dependency_plan> plan_dependencies(const json& s, const std::vector<std::string>& keys,
                                                 const std::vector<std::string>& declared,
                                                 std::vector<bool>& required, bool open) {
  dependency_plan plan;
  plan.at.resize(keys.size());
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const char* k : {"dependentRequired", "dependencies"}) {
    if (!s.contains(k))
      continue;
    if (!s[k].is_object())
      throw compile_error(std::string{"'"} + k + "' must be an object");
    for (auto it = s[k].begin(); it != s[k].end(); ++it) {
      if (is_true(it.value()))
        continue;  // dependencies: {a: true} / {a: {}} asks nothing
      if (!it.value().is_array())
        throw compile_error(std::string{"unsupported keyword '"} + k + "' (a schema-valued dependency)");
      for (const auto& r : it.value())
        pairs.emplace_back(it.key(), r.get<std::string>());
    }
  }
  auto index = [&](const std::string& k) {
    const auto it = std::find(keys.begin(), keys.end(), k);
    return it == keys.end() ? -1 : static_cast<int>(it - keys.begin());
  };
  const auto free_key = [&](const std::string& k) {
    return index(k) < 0 && std::find(declared.begin(), declared.end(), k) == declared.end();
  };
  for (const auto& [a, r] : pairs)
    if (open && (free_key(a) || free_key(r)))
      throw compile_error("unsupported keyword 'dependentRequired' (on a key that is not a declared property)");
  // A required member's dependencies are required, to a fixpoint.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [a, r] : pairs) {
      const int ia = index(a), ir = index(r);
      if (ia < 0 || !required[static_cast<std::size_t>(ia)] || a == r)
        continue;
      if (ir < 0)
        return std::nullopt;  // closed object: r can never appear
      if (!required[static_cast<std::size_t>(ir)])
        required[static_cast<std::size_t>(ir)] = true, changed = true;
    }
  }
  std::map<std::string, int> present_bit, absent_bit;
  auto bit = [&](std::map<std::string, int>& m, const std::string& k) {
    auto [it, fresh] = m.emplace(k, plan.bits);
    if (fresh && ++plan.bits > 8)
      throw compile_error("dependentRequired tracking more than 8 keys (unsupported)");
    return 1 << it->second;
  };
  for (const auto& [a, r] : pairs) {
    const int ia = index(a), ir = index(r);
    if (ia < 0 || a == r || required[static_cast<std::size_t>(ia)])
      continue;  // a never appears, asks nothing, or its dependencies are required already
    auto& ra = plan.at[static_cast<std::size_t>(ia)];
    if (ir < 0) {
      ra.never = true;
    } else if (ir > ia) {
      const int f = bit(present_bit, a);
      ra.present_sets |= f;
      plan.at[static_cast<std::size_t>(ir)].absent_forbidden_by |= f;
    } else {
      const int f = bit(absent_bit, r);
      plan.at[static_cast<std::size_t>(ir)].absent_sets |= f;
      ra.present_forbidden_by |= f;
    }
  }
  return plan;
}
} // namespace

std::optional<std::int32_t> other_key_shortest(const std::vector<std::string>& declared) {
  const auto taken = [&](const std::string& k) { return std::find(declared.begin(), declared.end(), k) != declared.end(); };
  if (!taken(""))
    return 3;  // "":
  for (char c = ' '; c <= '~'; ++c)
    if (c != '"' && c != '\\' && !taken(std::string(1, c)))
      return 4;  // "c":
  return std::nullopt;
}

byte_dfa other_key_dfa(const std::vector<std::string>& declared, std::span<const byte_dfa> found, budget& b,
                       std::uint32_t max_ws) {
  // Less the declared keys spelled with any whitespace: the same keys.
  const auto& any_key = json_constant_dfa(json_constant::any_key, max_ws);
  if (declared.empty() && found.empty())
    return any_key;
  std::vector<byte_dfa> keys;
  for (auto& k : declared)
    keys.push_back(*byte_dfa::spaced_literal(key_pieces(k)));
  std::vector<const byte_dfa*> ptrs;
  for (auto& k : keys)
    ptrs.push_back(&k);
  for (auto& k : found)
    ptrs.push_back(&k);
  return byte_dfa::minus(any_key, byte_dfa::unite(ptrs, b), b);
}

// `{` members in the schema's order (optional ones may be skipped), additional ones after, `}`.
// States (i, c): before declared member i, c members written so far (c > 0: a comma goes first),
// counted exactly up to maxProperties, else capped at max(1, minProperties); `}` once c reaches
// minProperties (additional members count once toward it: see below).
// Additional members are those of `patternProperties` (a key its pattern finds, with that
// pattern's value) and the rest (`additionalProperties`). A key two of the schemas would
// constrain at once (a declared key a pattern finds, a key two patterns find) needs the values'
// conjunction: refused, never guessed.
// propertyNames P, rewritten into what the object builder reads: a declared key P rejects is
// `false` (absent); the other keys are none (additionalProperties false), the finite set P lists
// (declared with additionalProperties' schema), or the keys P's one pattern finds (a pattern
// property over keys not declared). The validator decides each listed key, so P's other
// keywords hold there; a P of any other kind is refused.
json schema_builder::apply_property_names(const json& s) {
  json r = s;
  const json names = r["propertyNames"];
  r.erase("propertyNames");
  if (is_true(names))
    return r;
  auto refuse = [](const std::string& why) {
    throw compile_error("unsupported keyword 'propertyNames': " + why +
                        " (it is enforced as a list of keys, or one pattern with no other keyword)");
  };
  json_validator check{root_, gb_.bud()};
  // (Every key of `r` is in place before `props` is taken: an ordered_json's members are a
  // vector, and a new one moves them.)
  const json addl = r.contains("additionalProperties") ? r["additionalProperties"] : json(true);
  r["additionalProperties"] = false;
  if (!r.contains("properties"))
    r["properties"] = json::object();
  auto& props = r["properties"];
  for (auto it = props.begin(); it != props.end(); ++it)
    if (!check.valid(json(it.key()), names))
      it.value() = false;
  if (is_false(addl) || is_false(names))
    return r;
  if (r.contains("patternProperties") && !r["patternProperties"].empty())
    refuse("beside patternProperties");
  const auto alts = norm_.wide_alternatives(names);
  // A finite set of keys: each one P accepts and not declared takes additionalProperties' schema.
  json listed = json::array();
  bool finite = true;
  for (const auto& a : alts)
    if (auto v = values_of(a))
      listed.insert(listed.end(), v->begin(), v->end());
    else
      finite = false;
  if (finite) {
    for (const auto& k : listed)
      if (k.is_string() && !props.contains(k.get<std::string>()) && check.valid(k, names))
        props[k.get<std::string>()] = addl;
    return r;
  }
  // Any string, or one pattern (beside `type: string` and annotations).
  if (alts.size() != 1)
    refuse("a union of key schemas");
  std::string pattern;
  for (auto it = alts[0].begin(); it != alts[0].end(); ++it) {
    const auto& k = it.key();
    if (k == "pattern" && it.value().is_string())
      pattern = it.value().get<std::string>();
    else if (!(k == "type" && it.value() == "string") && k != "title" && k != "description" && k != "$comment" &&
             k != "examples" && k != "default")
      refuse("its keyword '" + k + "'");
  }
  if (pattern.empty())
    r["additionalProperties"] = addl;  // any string: every key
  else
    r["patternProperties"] = json{{pattern, addl}}, r["x-names-pattern"] = true;
  return r;
}

rule_nfa::frag schema_builder::build_object(rule_nfa& n, const json& s) {
  if (s.contains("propertyNames")) {
    owned_.push_back(apply_property_names(s));
    return build_object(n, owned_.back());
  }
  const json empty = json::object();
  const json t = true;
  const auto& props = s.contains("properties") ? s["properties"] : empty;
  const auto& addl = s.contains("additionalProperties") ? s["additionalProperties"] : t;
  if (!props.is_object())
    throw compile_error("'properties' must be an object");
  std::vector<std::string> req;
  if (s.contains("required"))
    for (auto& r : s["required"])
      req.push_back(r.get<std::string>());
  auto required = [&](const std::string& k) { return std::find(req.begin(), req.end(), k) != req.end(); };
  struct member {
    std::string key;
    const json* schema;
    bool required;
  };
  const auto& patterns = s.contains("patternProperties") ? s["patternProperties"] : empty;
  if (!patterns.is_object())
    throw compile_error("'patternProperties' must be an object");
  const bool names_pattern = s.value("x-names-pattern", false);  // finds undeclared keys only
  std::vector<member> members;
  std::vector<std::string> all_keys;
  for (auto it = props.begin(); it != props.end(); ++it) {
    all_keys.push_back(it.key());
    // A declared key that patterns also find must match their schemas too (`"properties":
    // {"id": ...}, "patternProperties": {".*": {"type": "string"}}`).
    const json* schema = &it.value();
    if (!names_pattern)
      for (auto p = patterns.begin(); p != patterns.end(); ++p)
        if (pattern_finds(p.key(), it.key(), gb_.bud())) {
          owned_.push_back(conj(*schema, p.value()));
          schema = &owned_.back();
        }
    if (is_false(*schema)) {
      if (required(it.key()))
        return {n.add(), n.add()};  // required yet forbidden: no value
      continue;
    }
    members.push_back({it.key(), schema, required(it.key())});
  }
  // A required key not declared: the patternProperties patterns that find it give its schema
  // (`{"required": ["en"], "patternProperties": {"^(en|de)$": ...}}`, a translations object),
  // else additionalProperties does.
  for (auto& r : req)
    if (!props.contains(r)) {
      const json* schema = &addl;
      bool found_by_pattern = false;
      if (!names_pattern)
        for (auto it = patterns.begin(); it != patterns.end(); ++it)
          if (pattern_finds(it.key(), r, gb_.bud())) {
            owned_.push_back(found_by_pattern ? conj(*schema, it.value()) : it.value());
            schema = &owned_.back();
            found_by_pattern = true;
          }
      if (is_false(*schema))
        return {n.add(), n.add()};
      members.push_back({r, schema, true});
      all_keys.push_back(r);
    }
  const bool extras = !is_false(addl);
  auto bound = [&](const char* k, std::int64_t d) -> std::int64_t {
    const auto v = count_keyword(s, k);
    return v ? static_cast<std::int64_t>(std::min(*v, 1e9)) : d;
  };
  constexpr std::int64_t no_max = -1;
  const auto minp = bound("minProperties", 0), maxp = bound("maxProperties", no_max);
  if (maxp != no_max && minp > maxp)
    return {n.add(), n.add()};
  if (minp > 64 || maxp > 64)
    throw compile_error("minProperties/maxProperties above 64 (unsupported)");
  const int counts = maxp != no_max ? static_cast<int>(maxp) + 1 : static_cast<int>(std::max<std::int64_t>(2, minp + 1));
  // The count after one more member; -1 past maxProperties.
  const auto next = [&](int c) {
    if (maxp != no_max)
      return c + 1 <= maxp ? c + 1 : -1;
    return std::min(c + 1, counts - 1);
  };
  std::vector<std::string> member_keys;
  std::vector<bool> member_required;
  for (const auto& x : members)
    member_keys.push_back(x.key), member_required.push_back(x.required);
  const auto deps = plan_dependencies(s, member_keys, all_keys, member_required, extras || !patterns.empty());
  if (!deps)
    return {n.add(), n.add()};  // a required member depends on one that cannot appear
  for (std::size_t i = 0; i < members.size(); ++i)
    members[i].required = member_required[i];
  const auto open = punct("{"), close = punct("}"), comma = punct(",");
  const std::size_t m = members.size();
  // States (i, c, f): f the dependency flags so far (one state set per flag value in use).
  const int flag_sets = 1 << deps->bits;
  std::vector<std::vector<std::int32_t>> st(m + 1, std::vector<std::int32_t>(static_cast<std::size_t>(counts * flag_sets)));
  for (auto& x : st)
    for (auto& q : x)
      q = n.add();
  auto at = [&](std::size_t i, int c, int f) { return st[i][static_cast<std::size_t>(c * flag_sets + f)]; };
  const auto start = n.add(), end = n.add();
  // One `key: value` member from state `from` to `to`; e == 1 (a member came before): a comma first.
  const auto member = [&](int e, auto from, auto key, auto val, auto to) {
    if (e == 1) {
      auto c = n.add();
      n.edge(from, comma, c);
      from = c;
    }
    auto k = n.add();
    n.edge(from, key, k);
    n.edge(k, val, to);
  };
  n.edge(start, open, at(0, 0, 0));
  for (std::size_t i = 0; i < m; ++i) {
    const auto key = lex("k:" + members[i].key, key_pieces(members[i].key));
    const auto val = value_rule(*members[i].schema);
    const auto& rule = deps->at[i];
    for (int c = 0; c < counts; ++c)
      for (int f = 0; f < flag_sets; ++f) {
        if (const int d = next(c); d >= 0 && !rule.never && (f & rule.present_forbidden_by) == 0)
          member(c > 0 ? 1 : 0, at(i, c, f), key, val, at(i + 1, d, f | rule.present_sets));
        if (!members[i].required && (f & rule.absent_forbidden_by) == 0)
          n.eps(at(i, c, f), at(i + 1, c, f | rule.absent_sets));
      }
  }
  for (int c = static_cast<int>(minp); c < counts; ++c)
    for (int f = 0; f < flag_sets; ++f)
      n.edge(at(m, c, f), close, end);
  if (patterns.empty() && !extras)
    return {start, end};
  // Additional members follow the declared ones. Two of them may spell the same key (a free
  // key, one pattern's keys) and a JSON object keeps one, so toward minProperties they count as
  // one (toward maxProperties each counts): after the first, states (c, f) move to (c', f) of a
  // second set, entered only where the declared members and that one key reach minProperties,
  // from where the object may always close. An object that needs two keys beyond its declared
  // ones would take repeated keys for distinct ones: refused, never guessed.
  if (minp > static_cast<std::int64_t>(m) + 1)
    throw compile_error("minProperties " + std::to_string(minp) + " needs " + std::to_string(minp - static_cast<std::int64_t>(m)) +
                        " keys beyond the declared properties, and additional keys may repeat (unsupported: declare the "
                        "properties, or lower minProperties)");
  std::vector<std::int32_t> with_extra(static_cast<std::size_t>(counts * flag_sets));
  for (auto& q : with_extra)
    q = n.add();
  auto extra_at = [&](int c, int f) { return with_extra[static_cast<std::size_t>(c * flag_sets + f)]; };
  for (int c = 0; c < counts; ++c)
    for (int f = 0; f < flag_sets; ++f)
      n.edge(extra_at(c, f), close, end);
  // One more additional member, from every state.
  const auto additional = [&](auto key, auto val) {
    for (int c = 0; c < counts; ++c)
      if (const int d = next(c); d >= 0)
        for (int f = 0; f < flag_sets; ++f) {
          if (c + 1 >= minp)
            member(c > 0 ? 1 : 0, at(m, c, f), key, val, extra_at(d, f));
          member(1, extra_at(c, f), key, val, extra_at(d, f));
        }
  };
  auto& b = gb_.bud();
  // The cache key of this object's "any other key" lexeme, looked up before anything is built
  // (objects with the same keys recur: an allOf's parts, a definition used in many places).
  std::string cache_key = "x:";
  for (auto& k : all_keys)
    cache_key += json(k).dump() + ",";
  for (auto it = patterns.begin(); it != patterns.end(); ++it)
    cache_key += "/" + it.key() + "/\x1f";
  const auto cached = lexemes_.find(cache_key);
  std::vector<byte_dfa> declared;
  if (!patterns.empty())
    for (auto& k : all_keys)
      declared.push_back(*byte_dfa::spaced_literal(key_pieces(k)));
  std::vector<byte_dfa> found;  // the keys each pattern finds
  for (auto it = patterns.begin(); it != patterns.end(); ++it) {
    auto keys = byte_dfa::of(json_lex::lead(pattern_key_rx(it.key(), ws_), ws_), b);
    // Declared and required keys are written as their members, with the schemas of the
    // patterns that find them (above); a propertyNames pattern (apply_property_names) finds the
    // other keys only.
    for (const auto& d : declared)
      keys = byte_dfa::minus(keys, d, b);
    found.push_back(std::move(keys));
  }
  // A key several patterns find matches all their schemas: the keys split by the set of
  // patterns that find them, each set's keys one lexeme with the conjunction of its schemas.
  std::vector<const json*> pattern_schemas;
  for (auto it = patterns.begin(); it != patterns.end(); ++it)
    pattern_schemas.push_back(&it.value());
  constexpr std::size_t max_overlapping = 6;  // 63 sets at most
  std::vector<std::uint64_t> sets;
  if (found.size() <= max_overlapping) {
    for (std::uint64_t set = 1; set < (std::uint64_t{1} << found.size()); ++set)
      sets.push_back(set);
  } else {  // many patterns: each alone, if no two find the same key
    if (found.size() > 64)
      throw compile_error("more than 64 patternProperties patterns (unsupported)");
    for (std::size_t q = 0; q < found.size(); ++q) {
      for (std::size_t r = q + 1; r < found.size(); ++r)
        if (!byte_dfa::intersect(found[q], found[r], b).empty())
          throw compile_error("two of more than " + std::to_string(max_overlapping) +
                              " patternProperties patterns match the same key (unsupported)");
      sets.push_back(std::uint64_t{1} << q);
    }
  }
  for (const auto set : sets) {
    std::optional<byte_dfa> keys;
    json schema = true;
    for (std::size_t q = 0; q < found.size(); ++q)
      if (set >> q & 1) {
        keys = keys ? byte_dfa::intersect(*keys, found[q], b) : found[q];
        schema = conj(schema, *pattern_schemas[q]);
      }
    for (std::size_t q = 0; q < found.size() && !keys->empty(); ++q)
      if (!(set >> q & 1) && found.size() <= max_overlapping)
        keys = byte_dfa::minus(*keys, found[q], b);
    if (keys->empty() || is_false(schema))
      continue;  // no such key, or such keys may not appear
    owned_.push_back(std::move(schema));
    const auto key = gb_.lexeme(std::move(*keys));
    additional(key, is_true(owned_.back()) ? any_value() : value_rule(owned_.back()));
  }
  if (extras) {
    // Any other key (spelled canonically, so a declared key can never pass as an extra one):
    // not declared, and found by no pattern.
    symbol key;
    if (cached != lexemes_.end()) {
      key = cached->second;
    } else if (const auto shortest = other_key_shortest(all_keys); patterns.empty() && shortest) {
      // Built on first use: an object's "other key" lexeme is the any-key automaton less a trie
      // of its keys, a product as large as the trie, and most objects of a large schema are
      // never entered by a given output.
      // Without patterns the parts are a trie of literal keys and one string automaton, linear
      // in the keys: built with no budget (it may run while a mask is computed).
      key = gb_.lazy_lexeme(
          [keys = all_keys, ws = ws_] {
            auto unbounded = budget::unbounded();
            return other_key_dfa(keys, {}, unbounded, ws);
          },
          *shortest);
      lexemes_.emplace(cache_key, key);
    } else {
      key = gb_.lexeme(other_key_dfa(all_keys, found, b, ws_));
      lexemes_.emplace(cache_key, key);
    }
    additional(key, is_true(addl) ? any_value() : value_rule(addl));
  }
  return {start, end};
}

bool pattern_finds(const std::string& pattern, const std::string& key, budget& b) {
  return byte_dfa::of(search_regex(pattern, spelling::raw), b).matches(key);
}

} // namespace detail

std::shared_ptr<const grammar> compile_json_schema(const nlohmann::ordered_json& schema, budget& b,
                                                   const json_options& opts) {
  detail::check_schema_shape(schema);
  detail::schema_builder sb{schema, b, opts};
  auto root = sb.value_rule(schema);
  return sb.finish(root);
}

std::shared_ptr<const grammar> compile_json_object(budget& b, const json_options& opts) {
  // JSON mode promises an object (OpenAI's, and vLLM's / llama.cpp's constrain it so): a bare
  // number or string would break every client that reads a key of the answer.
  const nlohmann::ordered_json object_schema = {{"type", "object"}};
  return compile_json_schema(object_schema, b, opts);
}

} // namespace deepinfer::recipe::so
