#include "recipe/structured/json_lexemes.hpp"

#include <algorithm>
#include <cctype>
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
  // Every string of this length: one counted run, not a tree of equivalent branches (the
  // automaton is not minimized, so each branch would be states of its own: 2^n of them).
  if (a.find_first_not_of('0') == std::string::npos && b.find_first_not_of('9') == std::string::npos)
    return digits(static_cast<std::uint32_t>(a.size()), static_cast<std::uint32_t>(a.size()));
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

// Decimal digit strings without leading zeros ("0" for zero): a < b.
bool text_below(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}
std::string text_plus_one(std::string n) {
  for (auto i = n.size(); i-- > 0;) {
    if (n[i] != '9') {
      ++n[i];
      return n;
    }
    n[i] = '0';
  }
  return "1" + n;
}
std::string text_minus_one(std::string n) {  // n > 0
  for (auto i = n.size(); i-- > 0;) {
    if (n[i] != '0') {
      --n[i];
      break;
    }
    n[i] = '9';
  }
  n.erase(0, std::min(n.find_first_not_of('0'), n.size() - 1));
  return n;
}

// Natural numbers in [a, b] (b: nullopt for no limit), as digit strings of any length.
rx nat_range(const std::string& a, const std::optional<std::string>& b) {
  if (b && text_below(*b, a))
    return rx::none();
  std::vector<rx> alts;
  const auto la = a.size();
  const std::size_t lb = b ? b->size() : la;
  alts.push_back(same_len(a, b && lb == la ? *b : std::string(la, '9')));
  if (lb > la + 1)  // every length strictly between: one counted run
    alts.push_back(rx::seq({rx::set({{'1', '9'}}), digits(static_cast<std::uint32_t>(la), static_cast<std::uint32_t>(lb - 2))}));
  if (lb > la)
    alts.push_back(same_len("1" + std::string(lb - 1, '0'), *b));
  if (!b)  // and every longer number
    alts.push_back(rx::seq({rx::set({{'1', '9'}}), digits(static_cast<std::uint32_t>(la), rx::unbounded)}));
  return rx::alt(std::move(alts));
}
rx nat_range(std::uint64_t a, std::optional<std::uint64_t> b) {
  return nat_range(std::to_string(a), b ? std::optional<std::string>{std::to_string(*b)} : std::nullopt);
}

rx frac_any() { return rx::opt(rx::seq({ch('.'), digits(1, rx::unbounded)})); }

// Fraction digits B (the digits after the point, maybe none) compared as 0.B with 0.F (F a
// digit string without trailing zeros, empty for zero): B with 0.B >= 0.F, > 0.F, <= 0.F,
// < 0.F. `nonempty`: B has at least one digit (it follows a point).
enum class cmp : std::uint8_t { ge, gt, le, lt };
rx fraction(cmp c, std::string_view f, bool nonempty) {
  const rx any = digits(nonempty ? 1 : 0, rx::unbounded);
  if (f.empty()) {
    switch (c) {
      case cmp::ge: return any;
      case cmp::gt: return rx::seq({rx::star(ch('0')), rx::set({{'1', '9'}}), digits(0, rx::unbounded)});
      case cmp::le: return nonempty ? rx::plus(ch('0')) : rx::star(ch('0'));
      case cmp::lt: return rx::none();
    }
  }
  const auto d = static_cast<std::uint32_t>(f[0]);
  std::vector<rx> alts;
  const bool up = c == cmp::ge || c == cmp::gt;
  // A first digit past f[0] (above for >=, >; below for <=, <) decides; equal, the rest does.
  if (up && d < '9')
    alts.push_back(rx::seq({rx::set({{d + 1, '9'}}), digits(0, rx::unbounded)}));
  if (!up && d > '0')
    alts.push_back(rx::seq({rx::set({{'0', d - 1}}), digits(0, rx::unbounded)}));
  alts.push_back(rx::seq({ch(static_cast<char>(d)), fraction(c, f.substr(1), false)}));
  // No digits at all is 0, below 0.F (F is not zero here).
  if (!nonempty && !up)
    alts.push_back(rx::eps());
  return rx::alt(std::move(alts));
}

// Magnitudes m (integer part without leading zeros, then maybe a point and digits) compared with
// the non-negative decimal `d`: m >= d (`c` ge), > d, <= d, < d.
rx magnitude(cmp c, const decimal& d) {
  // Equal integer parts: the fraction decides (no point: a fraction of zero).
  const bool empty_ok = c == cmp::ge ? d.frac.empty() : c == cmp::gt ? false : c == cmp::le ? true : !d.frac.empty();
  std::vector<rx> tail;
  if (empty_ok)
    tail.push_back(rx::eps());
  tail.push_back(rx::seq({ch('.'), fraction(c, d.frac, true)}));
  std::vector<rx> alts{rx::seq({rx::lit(d.whole), rx::alt(std::move(tail))})};
  if (c == cmp::ge || c == cmp::gt)
    alts.push_back(rx::seq({nat_range(text_plus_one(d.whole), std::nullopt), frac_any()}));
  else if (d.whole != "0")
    alts.push_back(rx::seq({nat_range("0", text_minus_one(d.whole)), frac_any()}));
  return rx::alt(std::move(alts));
}
} // namespace

rx lead(rx body, std::uint32_t max_ws) { return rx::seq({json_ws(max_ws), std::move(body)}); }

rx string_char() { return rx::set(any_cp(), spelling::json); }

rx any_string() {
  // A `\uXXXX` escape spells a code point: a surrogate only as a high-low pair. A lone one is
  // no string strict parsers take (nlohmann and serde_json refuse it, Go substitutes U+FFFD).
  auto esc = [](rx four) { return rx::seq({ch('\\'), ch('u'), std::move(four)}); };
  const auto d = rx::set({{'D', 'D'}, {'d', 'd'}});
  auto plain = rx::alt({rx::seq({rx::set({{'0', '9'}, {'A', 'C'}, {'E', 'F'}, {'a', 'c'}, {'e', 'f'}}), rx::rep(hex(), 3, 3)}),
                        rx::seq({d, rx::set({{'0', '7'}}), rx::rep(hex(), 2, 2)})});
  auto high = rx::seq({d, rx::set({{'8', '9'}, {'A', 'B'}, {'a', 'b'}}), rx::rep(hex(), 2, 2)});
  auto low = rx::seq({d, rx::set({{'C', 'F'}, {'c', 'f'}}), rx::rep(hex(), 2, 2)});
  auto u = rx::alt({esc(std::move(plain)), rx::seq({esc(std::move(high)), esc(std::move(low))})});
  return rx::seq({ch('"'), rx::star(rx::alt({string_char(), u})), ch('"')});
}

rx string_len(std::uint32_t min, std::uint32_t max) {
  return rx::seq({ch('"'), rx::rep(string_char(), min, max), ch('"')});
}

rx string_of(rx content) { return rx::seq({ch('"'), std::move(content), ch('"')}); }

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

std::optional<decimal> decimal::parse(std::string_view text) {
  // JSON number syntax: -? int (. digits)? ([eE] [+-]? digits)?
  decimal out;
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-')
    out.negative = true, ++i;
  std::string digits_all;
  std::size_t point = std::string::npos;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      if (point != std::string::npos)
        return std::nullopt;
      point = digits_all.size();
    } else {
      digits_all += text[i];
    }
  }
  if (digits_all.empty())
    return std::nullopt;
  long exp = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-'))
      neg = text[i] == '-', ++i;
    if (i == text.size())
      return std::nullopt;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
      if ((exp = exp * 10 + (text[i] - '0')) > 400)
        return std::nullopt;
    exp = neg ? -exp : exp;
  }
  if (i != text.size())
    return std::nullopt;
  // The point moves by the exponent; pad with zeros on either side.
  long at = static_cast<long>(point == std::string::npos ? digits_all.size() : point) + exp;
  if (at < 0)
    digits_all.insert(0, static_cast<std::size_t>(-at), '0'), at = 0;
  if (at > static_cast<long>(digits_all.size()))
    digits_all.append(static_cast<std::size_t>(at) - digits_all.size(), '0');
  out.whole = digits_all.substr(0, static_cast<std::size_t>(at));
  out.frac = digits_all.substr(static_cast<std::size_t>(at));
  out.whole.erase(0, std::min(out.whole.find_first_not_of('0'), out.whole.size()));
  if (out.whole.empty())
    out.whole = "0";
  while (!out.frac.empty() && out.frac.back() == '0')
    out.frac.pop_back();
  if (out.whole == "0" && out.frac.empty())
    out.negative = false;  // -0 is 0
  return out;
}

int decimal::compare(const decimal& a, const decimal& b) {
  if (a.negative != b.negative)
    return a.negative ? -1 : 1;
  // Magnitudes: whole parts have no leading zeros and fractions no trailing ones, so a longer
  // whole part is larger and fractions compare as text.
  int m = 0;
  if (a.whole.size() != b.whole.size())
    m = a.whole.size() < b.whole.size() ? -1 : 1;
  else if (const int w = a.whole.compare(b.whole); w != 0)
    m = w < 0 ? -1 : 1;
  else if (const int f = a.frac.compare(b.frac); f != 0)
    m = f < 0 ? -1 : 1;
  return a.negative ? -m : m;
}

rx number_beyond(const decimal& d, bool above, bool exclusive) {
  const cmp toward = above ? (exclusive ? cmp::gt : cmp::ge) : (exclusive ? cmp::lt : cmp::le);
  const cmp away = above ? (exclusive ? cmp::lt : cmp::le) : (exclusive ? cmp::gt : cmp::ge);
  const rx any_magnitude = rx::seq({rx::alt({ch('0'), rx::seq({rx::set({{'1', '9'}}), digits(0, rx::unbounded)})}), frac_any()});
  if (!d.negative) {
    // Non-negative d. Above: x = m with m vs d. Below: every negative x too, and m vs d.
    if (above)
      return magnitude(toward, d);
    // `-0` is 0: below 0 only when 0 is allowed.
    const bool zero = d.whole == "0" && d.frac.empty();
    const rx negative = zero && exclusive ? magnitude(cmp::gt, d) : any_magnitude;
    return rx::alt({rx::seq({ch('-'), negative}), magnitude(toward, d)});
  }
  // Negative d = -|d|: x = -m is above d when m is below |d|; every non-negative x is above.
  decimal mag = d;
  mag.negative = false;
  if (above)
    return rx::alt({any_magnitude, rx::seq({ch('-'), magnitude(away, mag)})});
  return rx::seq({ch('-'), magnitude(away, mag)});
}

} // namespace deepinfer::recipe::so::json_lex
