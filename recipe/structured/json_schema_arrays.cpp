// Arrays: `[` items `]` counted by minItems / maxItems, and uniqueItems over a finite set of items.
#include "recipe/structured/json_schema.hpp"
#include "recipe/structured/json_schema_impl.hpp"
#include "recipe/structured/json_validate.hpp"

#include <algorithm>
#include <map>

namespace deepinfer::recipe::so {
namespace detail {

namespace {

/// Above this many sets of distinct items (states of the array), uniqueItems is refused.
constexpr std::size_t max_unique_sets = 1024;

/// How many sets of at most `most` items `k` values make (capped just above `cap`).
std::size_t subsets_up_to(std::size_t k, std::size_t most, std::size_t cap) {
  std::size_t total = 0, c = 1;  // c = C(k, j)
  for (std::size_t j = 0; j <= most && j <= k; ++j) {
    total += c;
    if (total > cap)
      return cap + 1;
    c = c * (k - j) / (j + 1);
  }
  return total;
}

} // namespace

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
    const auto v = count_keyword(s, k);
    return v ? static_cast<std::size_t>(std::min(*v, 1e9)) : d;
  };
  const std::size_t min = num("minItems", 0);
  std::size_t max = num("maxItems", SIZE_MAX);
  if (is_false(*rest))
    max = std::min(max, prefix.size());
  if (min > max)
    return {n.add(), n.add()};
  // uniqueItems with room for two items or more (one item is always unique).
  if (s.contains("uniqueItems") && !s["uniqueItems"].is_boolean())
    throw compile_error("'uniqueItems' must be a boolean");
  if (s.value("uniqueItems", false) && max > 1) {
    if (!prefix.empty())
      throw compile_error("unsupported keyword 'uniqueItems' beside prefixItems (or an items array)");
    return build_unique_array(n, *rest, min, max);
  }
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


// uniqueItems: exact when the items are a finite set of values (enum, const, booleans, null, or
// a union of those): the array is an automaton over the sets of items written so far, each state
// offering only the values not in its set. Other items (any string, any number...) would need
// each item compared with the earlier ones as it is written: refused with a clear error.
rule_nfa::frag schema_builder::build_unique_array(rule_nfa& n, const json& items, std::size_t min, std::size_t max) {
  auto refuse = [&](const std::string& why) {
    throw compile_error("unsupported keyword 'uniqueItems': " + why +
                        " (it is enforced only where the items are a small finite set: enum, const, boolean, null)");
  };
  // The candidate values, then those the items schema accepts (the validator decides every
  // keyword beside them exactly), each once (JSON equality: 1 and 1.0 are one value).
  std::vector<json> candidates;
  if (is_true(items))
    refuse("the items may be any value");
  for (const auto& alt : norm_.wide_alternatives(items)) {
    if (auto listed = values_of(alt)) {
      candidates.insert(candidates.end(), listed->begin(), listed->end());
      continue;
    }
    if (!alt.contains("type"))
      refuse("the items may be any value");
    auto types = types_of(alt);
    if (types.contains("number"))
      types.erase("integer");
    for (const auto& t : types) {
      if (t == "null")
        candidates.push_back(nullptr);
      else if (t == "boolean")
        candidates.insert(candidates.end(), {json(false), json(true)});
      else
        refuse("its items may be any " + t);
    }
  }
  json_validator check{root_, gb_.bud()};
  std::vector<json> values;
  for (auto& v : candidates)
    if (std::find(values.begin(), values.end(), v) == values.end() && check.valid(v, items))
      values.push_back(std::move(v));
  const std::size_t most = std::min(max, values.size());
  if (min > most)
    return {n.add(), n.add()};  // more items asked for than there are distinct values
  if (subsets_up_to(values.size(), most, max_unique_sets) > max_unique_sets)
    refuse(std::to_string(values.size()) + " possible items, up to " + std::to_string(most) +
           " of them, make more than " + std::to_string(max_unique_sets) + " sets of items; lower maxItems");
  std::vector<symbol> item;
  for (const auto& v : values)
    item.push_back(lex("v:" + v.dump(), {v.dump()}));
  const auto open = punct("["), close = punct("]"), comma = punct(",");
  const auto start = n.add(), end = n.add();
  // The sets met so far (as a bit per value) -> their state, reached in order of size.
  std::map<std::vector<bool>, std::int32_t> state;
  std::vector<std::vector<bool>> todo{std::vector<bool>(values.size(), false)};
  state.emplace(todo.front(), n.add());
  n.edge(start, open, state.begin()->second);
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const auto used = todo[i];
    const auto at = state.at(used);
    const auto size = static_cast<std::size_t>(std::count(used.begin(), used.end(), true));
    if (size >= min)
      n.edge(at, close, end);
    if (size == most)
      continue;
    auto from = at;
    if (size > 0) {
      from = n.add();
      n.edge(at, comma, from);
    }
    for (std::size_t v = 0; v < values.size(); ++v) {
      if (used[v])
        continue;
      auto next = used;
      next[v] = true;
      auto [it, fresh] = state.emplace(next, 0);
      if (fresh) {
        it->second = n.add();
        todo.push_back(next);
      }
      n.edge(from, item[v], it->second);
    }
  }
  return {start, end};
}

} // namespace detail
} // namespace deepinfer::recipe::so
