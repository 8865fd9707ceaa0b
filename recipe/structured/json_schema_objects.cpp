#include "recipe/structured/json_schema.hpp"
#include "recipe/structured/json_schema_impl.hpp"

namespace deepinfer::recipe::so {
namespace detail {

namespace {
bool is_true(const json& s) { return (s.is_boolean() && s.get<bool>()) || (s.is_object() && s.empty()); }
bool is_false(const json& s) { return s.is_boolean() && !s.get<bool>(); }
rx key_rx(const std::string& key) {
  return rx::seq({rx::lit(json(key).dump()), json_ws(), rx::lit(":")});
}
} // namespace

// `{` members in the schema's order (optional ones may be skipped), additional ones after, `}`.
// States (i, e): before declared member i, e = whether a member was written (so a comma goes first).
rule_nfa::frag schema_builder::build_object(rule_nfa& n, const json& s) {
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
  std::vector<member> members;
  std::vector<std::string> all_keys;
  for (auto it = props.begin(); it != props.end(); ++it) {
    all_keys.push_back(it.key());
    if (is_false(it.value())) {
      if (required(it.key()))
        return {n.add(), n.add()};  // required yet forbidden: no value
      continue;
    }
    members.push_back({it.key(), &it.value(), required(it.key())});
  }
  for (auto& r : req)
    if (!props.contains(r)) {
      if (is_false(addl))
        return {n.add(), n.add()};
      members.push_back({r, &addl, true});
      all_keys.push_back(r);
    }
  const bool extras = !is_false(addl);
  const auto open = punct("{"), close = punct("}"), comma = punct(",");
  const std::size_t m = members.size();
  std::vector<std::array<std::int32_t, 2>> st(m + 1);
  for (auto& x : st)
    x = {n.add(), n.add()};
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
  n.edge(start, open, st[0][0]);
  for (std::size_t i = 0; i < m; ++i) {
    const auto key = lex("k:" + members[i].key, key_rx(members[i].key));
    const auto val = value_rule(*members[i].schema);
    for (int e = 0; e < 2; ++e) {
      member(e, st[i][e], key, val, st[i + 1][1]);
      if (!members[i].required)
        n.eps(st[i][e], st[i + 1][e]);
    }
  }
  for (int e = 0; e < 2; ++e)
    n.edge(st[m][e], close, end);
  if (extras) {
    // Any other key (spelled canonically, so a declared key can never pass as an extra one).
    auto& b = gb_.bud();
    auto any_key = byte_dfa::of(json_lex::lead(rx::seq({json_lex::string_len(0, rx::unbounded), json_ws(), rx::lit(":")})), b);
    if (!all_keys.empty()) {
      std::vector<byte_dfa> keys;
      for (auto& k : all_keys)
        keys.push_back(byte_dfa::of(json_lex::lead(key_rx(k)), b));
      std::vector<const byte_dfa*> ptrs;
      for (auto& k : keys)
        ptrs.push_back(&k);
      any_key = byte_dfa::minus(any_key, byte_dfa::unite(ptrs, b), b);
    }
    std::string cache_key = "x:";
    for (auto& k : all_keys)
      cache_key += json(k).dump() + ",";
    symbol key;
    if (auto it = lexemes_.find(cache_key); it != lexemes_.end())
      key = it->second;
    else
      key = gb_.lexeme(std::move(any_key)), lexemes_.emplace(cache_key, key);
    const auto val = is_true(addl) ? any_value() : value_rule(addl);
    for (int e = 0; e < 2; ++e)
      member(e, st[m][e], key, val, st[m][1]);
  }
  return {start, end};
}

// `[` items `]`: prefix items by position, then the rest, counted up to max(prefix, minItems).
rule_nfa::frag schema_builder::build_array(rule_nfa& n, const json& s) {
  std::vector<const json*> prefix;
  const json t = true;
  const json* rest = &t;
  if (s.contains("prefixItems")) {
    for (auto& p : s["prefixItems"])
      prefix.push_back(&p);
    if (s.contains("items"))
      rest = &s["items"];
  } else if (s.contains("items") && s["items"].is_array()) {
    for (auto& p : s["items"])
      prefix.push_back(&p);
    if (s.contains("additionalItems"))
      rest = &s["additionalItems"];
  } else if (s.contains("items")) {
    rest = &s["items"];
  }
  auto num = [&](const char* k, std::size_t d) -> std::size_t {
    if (!s.contains(k))
      return d;
    if (!s[k].is_number() || s[k].get<double>() < 0)
      throw compile_error(std::string{"'"} + k + "' must be a non-negative number");
    return static_cast<std::size_t>(std::min(s[k].get<double>(), 1e9));
  };
  const std::size_t min = num("minItems", 0);
  std::size_t max = num("maxItems", SIZE_MAX);
  if (is_false(*rest))
    max = std::min(max, prefix.size());
  if (min > max)
    return {n.add(), n.add()};
  const std::size_t chain = max != SIZE_MAX ? max : std::max<std::size_t>({prefix.size(), min, 1});
  if (chain > 2048)
    throw compile_error("minItems/maxItems/prefixItems above 2048 (unsupported)");
  const auto open = punct("["), close = punct("]"), comma = punct(",");
  const auto start = n.add(), end = n.add();
  std::vector<std::int32_t> at(chain + 1);
  for (auto& x : at)
    x = n.add();
  n.edge(start, open, at[0]);
  auto item = [&](std::size_t c) { return value_rule(c < prefix.size() ? *prefix[c] : *rest); };
  for (std::size_t c = 0; c <= chain; ++c) {
    if (c >= min)
      n.edge(at[c], close, end);
    const bool last = c == chain;
    if (last && max != SIZE_MAX)
      break;
    const auto to = last ? at[c] : at[c + 1];
    auto cur = at[c];
    if (c > 0) {
      auto x = n.add();
      n.edge(cur, comma, x);
      cur = x;
    }
    n.edge(cur, item(c), to);
  }
  return {start, end};
}

} // namespace detail

std::shared_ptr<const grammar> compile_json_schema(const nlohmann::ordered_json& schema, budget& b) {
  detail::schema_builder sb{schema, b};
  auto root = sb.value_rule(schema);
  return sb.finish(root);
}

std::shared_ptr<const grammar> compile_any_json(budget& b) {
  const nlohmann::ordered_json any = nlohmann::ordered_json::object();
  detail::schema_builder sb{any, b};
  return sb.finish(sb.any_value());
}

} // namespace deepinfer::recipe::so
