// Number lexemes of the JSON Schema compiler: bounds exactly as written, OpenAPI's int32, and
// multipleOf as a divisibility automaton (split from json_schema_build.cpp).
#include "recipe/structured/json_schema_impl.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace deepinfer::recipe::so::detail {

// Numbers (no exponent; after JSON whitespace) that are multiples of `m` (a decimal > 0): with M
// its digits as an integer and d its decimals, x * 10^d is an integer divisible by M. Read digit
// by digit modulo M: the integer part, then at most d decimals, then only zeros.
byte_dfa multiple_of_dfa(const json_lex::decimal& m, budget& b) {
  const std::string digits_text = m.whole + m.frac;
  const auto nz = digits_text.find_first_not_of('0');
  const std::size_t d = m.frac.size();
  if (nz == std::string::npos || m.negative)
    throw compile_error("'multipleOf' must be a number above 0");
  if (digits_text.size() - nz > 6 || d > 12)
    throw compile_error("'multipleOf' with more than 6 significant digits or 12 decimals (unsupported)");
  const auto M = std::stoull(digits_text.substr(nz));
  if (M * (d + 3) > 200'000)
    throw compile_error("'multipleOf' too large (unsupported)");
  const auto mod = static_cast<std::uint32_t>(M);
  byte_nfa nfa;
  const auto start = nfa.add(), sign = nfa.add();
  auto block = [&] {
    const auto first = nfa.add();
    for (std::uint32_t r = 1; r < mod; ++r)
      nfa.add();
    return first;
  };
  const auto ints = block();
  std::vector<std::int32_t> frac(d + 1);  // frac[f][r]: f decimals read (frac[0]: just the point)
  for (auto& f : frac)
    f = block();
  const auto zeros = block();  // d decimals read, then zeros
  auto& st = nfa.states();
  for (std::uint8_t c : {' ', '\t', '\n', '\r'})
    st[start].edges.push_back({c, c, start});
  st[start].edges.push_back({'-', '-', sign});
  auto digit_edges = [&](std::int32_t from, std::uint32_t r, std::int32_t to_block) {
    for (std::uint32_t c = 0; c < 10; ++c)
      st[from].edges.push_back({static_cast<std::uint8_t>('0' + c), static_cast<std::uint8_t>('0' + c),
                                to_block + static_cast<std::int32_t>((r * 10 + c) % mod)});
  };
  digit_edges(start, 0, ints);
  digit_edges(sign, 0, ints);
  // r * 10^k mod M, for the decimals not written.
  auto scaled_zero = [&](std::uint32_t r, std::size_t k) {
    std::uint64_t v = r;
    for (std::size_t i = 0; i < k; ++i)
      v = v * 10 % mod;
    return v == 0;
  };
  for (std::uint32_t r = 0; r < mod; ++r) {
    const auto q = ints + static_cast<std::int32_t>(r);
    digit_edges(q, r, ints);
    st[q].edges.push_back({'.', '.', frac[0] + static_cast<std::int32_t>(r)});
    if (scaled_zero(r, d))
      st[q].tag = 0;
    for (std::size_t f = 0; f <= d; ++f) {
      const auto p = frac[f] + static_cast<std::int32_t>(r);
      if (f < d)
        digit_edges(p, r, frac[f + 1]);
      else
        st[p].edges.push_back({'0', '0', zeros + static_cast<std::int32_t>(r)});
      if (f > 0 && scaled_zero(r, d - f))
        st[p].tag = 0;
    }
    const auto z = zeros + static_cast<std::int32_t>(r);
    st[z].edges.push_back({'0', '0', z});
    if (r == 0)
      st[z].tag = 0;
  }
  return byte_dfa::determinize(nfa, start, b);
}


symbol schema_builder::number_lexeme(const json& s, bool integer) {
  // Each bound as written (its text: a double's nearest value would move 0.1 off the bound).
  struct bound {
    double v;
    std::string text;
    bool excl = false;
  };
  auto num = [&](const char* k) -> std::optional<bound> {
    if (!s.contains(k))
      return std::nullopt;
    if (!s[k].is_number())
      throw compile_error(std::string{"'"} + k + "' must be a number");
    return bound{s[k].get<double>(), s[k].dump()};
  };
  std::optional<bound> lo, hi;
  if (auto v = num("minimum"))
    lo = v;
  if (auto v = num("exclusiveMinimum"); v && (!lo || v->v >= lo->v))
    lo = v, lo->excl = true;
  if (auto v = num("maximum"))
    hi = v;
  if (auto v = num("exclusiveMaximum"); v && (!hi || v->v <= hi->v))
    hi = v, hi->excl = true;
  // OpenAPI's int32 is a range (int64 is wider than any bound supported here: a note only).
  if (integer && s.contains("format") && s["format"] == "int32") {
    if (!lo || lo->v < -2147483648.0)
      lo = bound{-2147483648.0, "-2147483648"};
    if (!hi || hi->v > 2147483647.0)
      hi = bound{2147483647.0, "2147483647"};
  }
  // Integer bounds past 2^53 (an int64's limits, a double's) are not exact as doubles: such an
  // integer range is the decimal range below intersected with the integers.
  const bool wide = (lo && std::fabs(lo->v) > 9e15) || (hi && std::fabs(hi->v) > 9e15);
  // multipleOf (several after an allOf): each a divisibility automaton the value must pass.
  std::vector<std::string> multiples;
  if (s.contains("multipleOf"))
    multiples.push_back(s["multipleOf"].dump());
  if (s.contains("x-multipleOf"))
    for (const auto& v : s["x-multipleOf"])
      multiples.push_back(v.dump());
  std::string key = std::string{integer ? "i:" : "n:"} + (lo ? lo->text : "") + (lo && lo->excl ? "x" : "") + ":" +
                    (hi ? hi->text : "") + (hi && hi->excl ? "x" : "");
  for (const auto& m : multiples)
    key += "%" + m;
  if (auto it = lexemes_.find(key); it != lexemes_.end())
    return it->second;
  if (!lo && !hi && multiples.empty()) {
    auto sym = gb_.lexeme(json_constant_dfa(integer ? json_constant::any_integer : json_constant::any_number, ws_));
    lexemes_.emplace(key, sym);
    return sym;
  }
  auto& bud = gb_.bud();
  byte_dfa d;
  const bool int32_range = integer && lo && hi && lo->v == -2147483648.0 && !lo->excl && hi->v == 2147483647.0 && !hi->excl;
  if (!lo && !hi) {
    d = json_constant_dfa(integer ? json_constant::any_integer : json_constant::any_number, ws_);
  } else if (int32_range) {
    d = json_constant_dfa(json_constant::int32, ws_);
  } else if (integer && !wide) {
    std::optional<std::int64_t> a, b;
    if (lo)
      a = static_cast<std::int64_t>(lo->excl ? std::floor(lo->v) + 1 : std::ceil(lo->v));
    if (hi)
      b = static_cast<std::int64_t>(hi->excl ? std::ceil(hi->v) - 1 : std::floor(hi->v));
    d = byte_dfa::of(json_lex::lead(json_lex::integer(a, b), ws_), bud);
  } else {
    // A range is two one-sided sets intersected; each bound exactly as written.
    auto side = [&](const bound& v, bool above) {
      const auto dec = json_lex::decimal::parse(v.text);
      if (!dec || dec->frac.size() > 64)
        throw compile_error("a numeric bound with more than 64 decimals (unsupported)");
      return byte_dfa::of(json_lex::lead(json_lex::number_beyond(*dec, above, v.excl), ws_), bud);
    };
    if (lo && hi)
      d = byte_dfa::intersect(side(*lo, true), side(*hi, false), bud);
    else
      d = lo ? side(*lo, true) : side(*hi, false);
    if (integer)
      d = byte_dfa::intersect(d, json_constant_dfa(json_constant::any_integer, ws_), bud);
  }
  for (const auto& m : multiples) {
    const auto dec = json_lex::decimal::parse(m);
    if (!dec)
      throw compile_error("'multipleOf' must be a number above 0");
    d = byte_dfa::intersect(d, multiple_of_dfa(*dec, bud), bud);
  }
  auto sym = gb_.lexeme(std::move(d));
  lexemes_.emplace(key, sym);
  return sym;
}

} // namespace deepinfer::recipe::so::detail
