#include "recipe/structured/json_lexemes.hpp"

#include "recipe/structured/regex_parser.hpp"

#include <string>

namespace deepinfer::recipe::so::json_lex {

namespace {
rx digit() { return rx::set({{'0', '9'}}); }
rx digits(std::uint32_t min, std::uint32_t max) { return rx::rep(digit(), min, max); }
rx ch(char c) { return rx::cp(static_cast<unsigned char>(c)); }
rx hex() { return rx::set({{'0', '9'}, {'A', 'F'}, {'a', 'f'}}); }

// Decimal spellings (no leading zeros) of the integers in [a, b], both with `n` digits.
rx same_len(const std::string& a, const std::string& b) {
  if (a.empty())
    return rx::eps();
  if (a[0] == b[0])
    return rx::seq({ch(a[0]), same_len(a.substr(1), b.substr(1))});
  const auto n = static_cast<std::uint32_t>(a.size() - 1);
  std::vector<rx> alts;
  alts.push_back(rx::seq({ch(a[0]), same_len(a.substr(1), std::string(n, '9'))}));
  if (a[0] + 1 <= b[0] - 1)
    alts.push_back(rx::seq({rx::set({{static_cast<std::uint32_t>(a[0] + 1), static_cast<std::uint32_t>(b[0] - 1)}}), digits(n, n)}));
  alts.push_back(rx::seq({ch(b[0]), same_len(std::string(n, '0'), b.substr(1))}));
  return rx::alt(std::move(alts));
}

// Natural numbers in [a, b] (b: nullopt for no limit).
rx nat_range(std::uint64_t a, std::optional<std::uint64_t> b) {
  if (b && *b < a)
    return rx::none();
  std::vector<rx> alts;
  const auto la = std::to_string(a).size();
  const std::size_t lb = b ? std::to_string(*b).size() : la;
  for (std::size_t len = la; len <= lb; ++len) {
    std::uint64_t lo = len == la ? a : 1;
    for (std::size_t i = 1; i < len && len != la; ++i)
      lo *= 10;
    std::string hi_s = b && len == lb ? std::to_string(*b) : std::string(len, '9');
    std::string lo_s = std::to_string(lo);
    alts.push_back(same_len(lo_s, hi_s));
  }
  if (!b)  // and every longer number
    alts.push_back(rx::seq({rx::set({{'1', '9'}}), digits(static_cast<std::uint32_t>(la), rx::unbounded)}));
  return rx::alt(std::move(alts));
}

rx frac_any() { return rx::opt(rx::seq({ch('.'), digits(1, rx::unbounded)})); }
rx frac_zero() { return rx::opt(rx::seq({ch('.'), rx::plus(ch('0'))})); }
rx frac_nonzero() {
  return rx::seq({ch('.'), digits(0, rx::unbounded), rx::set({{'1', '9'}}), digits(0, rx::unbounded)});
}

// Non-negative magnitudes m with lo (<) <= m (<) <= hi; integer bounds, hi nullopt = none.
rx magnitude(std::uint64_t lo, bool lo_excl, std::optional<std::uint64_t> hi, bool hi_excl) {
  auto lit = [](std::uint64_t v) { return rx::lit(std::to_string(v)); };
  if (hi && *hi < lo)
    return rx::none();
  if (hi && *hi == lo)
    return (lo_excl || hi_excl) ? rx::none() : rx::seq({lit(lo), frac_zero()});
  std::vector<rx> alts;
  // n == lo: any fraction (inclusive) or a non-zero one (exclusive).
  alts.push_back(rx::seq({lit(lo), lo_excl ? frac_nonzero() : frac_any()}));
  // lo < n < hi: anything.
  if (!hi || *hi > lo + 1)
    alts.push_back(rx::seq({nat_range(lo + 1, hi ? std::optional<std::uint64_t>{*hi - 1} : std::nullopt), frac_any()}));
  // n == hi: only the value itself.
  if (hi && !hi_excl)
    alts.push_back(rx::seq({lit(*hi), frac_zero()}));
  return rx::alt(std::move(alts));
}
} // namespace

rx lead(rx body, std::uint32_t max_ws) { return rx::seq({json_ws(max_ws), std::move(body)}); }

rx string_char() { return rx::set(any_cp(), spelling::json); }

rx any_string() {
  auto u = rx::seq({ch('\\'), ch('u'), rx::rep(hex(), 4, 4)});
  return rx::seq({ch('"'), rx::star(rx::alt({string_char(), u})), ch('"')});
}

rx string_len(std::uint32_t min, std::uint32_t max) {
  return rx::seq({ch('"'), rx::rep(string_char(), min, max), ch('"')});
}

rx string_of(rx content) { return rx::seq({ch('"'), std::move(content), ch('"')}); }

std::optional<rx> format(std::string_view name) {
  static const std::string date =
    "\\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|02-(0[1-9]|1\\d|2\\d))";
  static const std::string time =
    "([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)?([Zz]|[+-]([01]\\d|2[0-3]):[0-5]\\d)";
  static const std::string octet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
  static const std::string label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
  std::string re;
  if (name == "date")
    re = date;
  else if (name == "time")
    re = time;
  else if (name == "date-time")
    re = date + "[Tt]" + time;
  else if (name == "uuid")
    re = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  else if (name == "email")
    re = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@" + label + "(\\." + label + ")*";
  else if (name == "uri")
    re = "[A-Za-z][A-Za-z0-9+.-]*:[^\\s<>\"{}|\\\\^`]*";
  else if (name == "ipv4")
    re = octet + "\\." + octet + "\\." + octet + "\\." + octet;
  else if (name == "hostname")
    re = label + "(\\." + label + ")*";
  else
    return std::nullopt;
  return parse_regex(re, spelling::json).body;
}

rx any_number() {
  auto intpart = rx::alt({ch('0'), rx::seq({rx::set({{'1', '9'}}), digits(0, rx::unbounded)})});
  auto exp = rx::opt(rx::seq({rx::set({{'E', 'E'}, {'e', 'e'}}), rx::opt(rx::set({{'+', '+'}, {'-', '-'}})),
                              digits(1, rx::unbounded)}));
  return rx::seq({rx::opt(ch('-')), intpart, frac_any(), exp});
}

rx integer(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi) {
  std::vector<rx> alts;
  // Non-negative part.
  if (!hi || *hi >= 0) {
    const std::uint64_t a = lo && *lo > 0 ? static_cast<std::uint64_t>(*lo) : 0;
    alts.push_back(nat_range(a, hi ? std::optional<std::uint64_t>{static_cast<std::uint64_t>(*hi)} : std::nullopt));
  }
  // Negative part: -k for k in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const std::uint64_t a = hi && *hi < 0 ? static_cast<std::uint64_t>(-*hi) : 1;
    alts.push_back(rx::seq({ch('-'), nat_range(a, lo ? std::optional<std::uint64_t>{static_cast<std::uint64_t>(-*lo)} : std::nullopt)}));
  }
  return rx::alt(std::move(alts));  // 3.0 is a number, not an integer, for strict validators
}

rx number(std::optional<std::int64_t> lo, bool lo_excl, std::optional<std::int64_t> hi, bool hi_excl) {
  std::vector<rx> alts;
  // v >= 0 (zero itself unless excluded by the bounds).
  if (!hi || *hi > 0 || (*hi == 0 && !hi_excl)) {
    const bool from_zero = !lo || *lo < 0;
    const std::uint64_t a = from_zero ? 0 : static_cast<std::uint64_t>(*lo);
    alts.push_back(magnitude(a, from_zero ? false : lo_excl,
                             hi ? std::optional<std::uint64_t>{static_cast<std::uint64_t>(*hi)} : std::nullopt, hi_excl));
  }
  // v < 0: magnitude m > 0 with -hi (<) <= m (<) <= -lo.
  if (!lo || *lo < 0) {
    const bool to_zero = !hi || *hi >= 0;
    const std::uint64_t a = to_zero ? 0 : static_cast<std::uint64_t>(-*hi);
    alts.push_back(rx::seq({ch('-'), magnitude(a, to_zero ? true : hi_excl,
                                               lo ? std::optional<std::uint64_t>{static_cast<std::uint64_t>(-*lo)} : std::nullopt,
                                               lo_excl)}));
  }
  return rx::alt(std::move(alts));
}

} // namespace deepinfer::recipe::so::json_lex
