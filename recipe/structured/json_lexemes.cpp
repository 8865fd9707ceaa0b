#include "recipe/structured/json_lexemes.hpp"

#include "recipe/structured/regex_parser.hpp"

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

// A JSON-string content code point set (spelled as a JSON string writes it).
rx js(std::vector<cp_range> r) { return rx::set(std::move(r), spelling::json); }
rx jc(char c) { return rx::cp(static_cast<unsigned char>(c), spelling::json); }
rx jlit(std::string_view t) { return rx::lit(t, spelling::json); }
rx jhex() { return js({{'0', '9'}, {'A', 'F'}, {'a', 'f'}}); }

std::vector<cp_range> chars_of(std::string_view cs) {
  std::vector<cp_range> r;
  for (unsigned char c : cs)
    r.push_back({c, c});
  return normalize(std::move(r));
}

// Format `regex`: ECMA-262 patterns, as the subset that ECMA-262 in unicode mode and Python's
// `re` both compile, so every string it lets through is a pattern to either: groups nested at
// most `depth` deep (a regular language needs a bound; real patterns rarely nest 4 deep), no
// backreferences, named groups or lookbehind, `{` `}` `]` only escaped, class ranges of digits,
// or of letters from the first or to the last of their kind, a count's minimum not above its maximum.
rx regex_syntax(int depth) {
  static const std::string syntax = "^$\\.*+?()[]{}|";
  const rx plain = js(complement(chars_of(syntax)));
  const rx char_escape = rx::seq({jc('\\'), rx::alt({js(chars_of("dDwWsSnrtfv/" + syntax)),
                                                     rx::seq({jc('x'), jhex(), jhex()}),
                                                     rx::seq({jc('u'), rx::rep(jhex(), 4, 4)})})});
  // A class: `[`, maybe `^`, one or more items, `]`. Items: a character but `]\-[^`, an escape
  // (`\-` and `\b`, a backspace there, too), or a range.
  const std::string not_single = "]\\-[^";
  const rx single = js(complement(chars_of(not_single)));
  const rx class_escape = rx::seq({jc('\\'), rx::alt({js(chars_of("dDwWsSnrtfvb-/" + syntax)),
                                                      rx::seq({jc('x'), jhex(), jhex()}),
                                                      rx::seq({jc('u'), rx::rep(jhex(), 4, 4)})})});
  // Ranges always in order (`[z-a]` is an error): two digits, or lower or upper letters that
  // start at `a`/`A` or end at `z`/`Z` (`a-f`, `A-Z`; the automaton remembers a digit, and of
  // a letter only its kind).
  std::vector<rx> ranges;
  for (std::uint32_t digit = '0'; digit <= '9'; ++digit)  // and any two digits in order (`1-5`)
    ranges.push_back(rx::seq({js({{digit, digit}}), jc('-'), js({{digit, '9'}})}));
  for (auto [first, last] : {std::pair{'a', 'z'}, {'A', 'Z'}}) {
    const rx kind = js({{static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(last)}});
    ranges.push_back(rx::seq({jc(first), jc('-'), kind}));
    ranges.push_back(rx::seq({kind, jc('-'), jc(last)}));
  }
  // `-` stands for itself first or last (`[\w.-]`, `[-+]`), where it cannot start a range.
  const rx items = rx::plus(rx::alt({rx::alt(std::move(ranges)), single, class_escape}));
  const rx klass = rx::seq({jc('['), rx::opt(jc('^')),
                            rx::alt({rx::seq({rx::opt(jc('-')), items, rx::opt(jc('-'))}), jc('-')}), jc(']')});
  // Quantifiers: * + ? or a count {n} {n,} {n,m} (m >= n), each maybe lazy.
  const rx d = js({{'0', '9'}});
  std::vector<rx> counts;
  for (std::uint32_t n = 0; n <= 9; ++n)
    counts.push_back(rx::seq({js({{'0' + n, '0' + n}}),
                              rx::opt(rx::seq({jc(','), rx::opt(rx::alt({js({{'0' + n, '9'}}),
                                                                          rx::seq({js({{'1', '9'}}), d})}))}))}));
  counts.push_back(rx::seq({js({{'1', '9'}}), d, rx::opt(jc(','))}));
  const rx quant = rx::seq({rx::alt({js(chars_of("*+?")), rx::seq({jc('{'), rx::alt(std::move(counts)), jc('}')})}),
                            rx::opt(jc('?'))});
  // One copy of each level inside the next (the automaton stays linear in `depth`): a
  // disjunction is terms and `|` in any order (empty alternatives are valid), a lookahead holds
  // no group (it may not be quantified, so it cannot share the groups' path).
  const rx assertion = rx::alt({js(chars_of("^$")), rx::seq({jc('\\'), js(chars_of("bB"))})});
  const std::vector<rx> flat{plain, jc('.'), char_escape, klass};
  const rx flat_disjunction =
    rx::star(rx::alt({rx::seq({rx::alt(flat), rx::opt(quant)}), assertion, jc('|')}));
  const rx lookahead = rx::seq({jlit("(?"), js(chars_of("=!")), flat_disjunction, jc(')')});
  rx disjunction = flat_disjunction;
  for (int level = 1; level <= depth; ++level) {
    std::vector<rx> atoms = flat;
    atoms.push_back(rx::seq({jc('('), rx::opt(jlit("?:")), std::move(disjunction), jc(')')}));
    disjunction = rx::star(rx::alt({rx::seq({rx::alt(std::move(atoms)), rx::opt(quant)}), assertion, lookahead, jc('|')}));
  }
  return disjunction;
}

// Format `uri-template`: RFC 6570 (level 4): literals and `{op var,var:3,list*}` expressions.
rx uri_template() {
  std::vector<cp_range> lit = chars_of("!#$&=]_~");
  for (cp_range r : {cp_range{0x28, 0x3B}, {0x3F, 0x5B}, {0x61, 0x7A}, {0xA0, 0xD7FF}, {0xE000, 0xFDCF},
                     {0xFDF0, 0xFFEF}})  // ucschar and iprivate (E000-F8FF) in the BMP
    lit.push_back(r);
  for (std::uint32_t plane = 1; plane <= 16; ++plane)  // ucschar planes 1-14, iprivate 15-16
    lit.push_back({plane * 0x10000 + (plane == 14 ? 0x1000 : 0), plane * 0x10000 + 0xFFFD});
  const rx pct = rx::seq({jc('%'), jhex(), jhex()});
  const rx varchar = rx::alt({js({{'A', 'Z'}, {'a', 'z'}, {'0', '9'}, {'_', '_'}}), pct});
  const rx varname = rx::seq({varchar, rx::star(rx::seq({rx::opt(jc('.')), varchar}))});
  const rx modifier = rx::alt({rx::seq({jc(':'), js({{'1', '9'}}), rx::rep(js({{'0', '9'}}), 0, 3)}), jc('*')});
  const rx varspec = rx::seq({varname, rx::opt(modifier)});
  const rx expression = rx::seq({jc('{'), rx::opt(js(chars_of("+#./;?&=,!@|"))), varspec,
                                 rx::star(rx::seq({jc(','), varspec})), jc('}')});
  return rx::star(rx::alt({js(normalize(std::move(lit))), pct, expression}));
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

bool known_format(std::string_view name) {
  static constexpr std::string_view names[] = {
    "date", "time", "date-time", "uuid", "email", "idn-email", "uri", "iri", "ipv4", "ip-address", "hostname",
    "idn-hostname", "host-name", "duration", "ipv6", "uri-reference", "iri-reference", "json-pointer",
    "relative-json-pointer", "byte", "binary", "password", "regex", "uri-template"};
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

std::optional<rx> format(std::string_view name) {
  static const std::string date =
    "\\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|02-(0[1-9]|1\\d|2\\d))";
  static const std::string time =
    "([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)?([Zz]|[+-]([01]\\d|2[0-3]):[0-5]\\d)";
  static const std::string octet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
  static const std::string label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
  static const std::string dur_time = "T(\\d+H(\\d+M(\\d+S)?)?|\\d+M(\\d+S)?|\\d+S)";
  static const std::string h16 = "[0-9A-Fa-f]{1,4}";
  static const std::string ipv6 = "(" + h16 + ":){7}" + h16 + "|(" + h16 + ":){1,7}:|(" + h16 + ":){1,6}:" + h16 +
                                  "|(" + h16 + ":){1,5}(:" + h16 + "){1,2}|(" + h16 + ":){1,4}(:" + h16 + "){1,3}|(" +
                                  h16 + ":){1,3}(:" + h16 + "){1,4}|(" + h16 + ":){1,2}(:" + h16 + "){1,5}|" + h16 +
                                  ":(:" + h16 + "){1,6}|:((:" + h16 + "){1,7}|:)";
  // RFC 3986 characters: a path character but `:` (a relative reference's first segment), any.
  static const std::string pchar = "([A-Za-z0-9._~!$&'()*+,;=@-]|%[0-9A-Fa-f]{2})";
  static const std::string uric = "([A-Za-z0-9._~:/?#@!$&'()*+,;=-]|%[0-9A-Fa-f]{2})";
  std::string re;
  if (name == "date")
    re = date;
  else if (name == "time")
    re = time;
  else if (name == "date-time")
    re = date + "[Tt]" + time;
  else if (name == "uuid")
    re = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  else if (name == "email" || name == "idn-email")  // ASCII addresses are IDN addresses too
    re = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@" + label + "(\\." + label + ")*";
  else if (name == "uri" || name == "iri")  // URIs are IRIs
    re = "[A-Za-z][A-Za-z0-9+.-]*:[^\\s<>\"{}|\\\\^`]*";
  else if (name == "ipv4" || name == "ip-address")  // draft 3 spelled it ip-address
    re = octet + "\\." + octet + "\\." + octet + "\\." + octet;
  else if (name == "hostname" || name == "idn-hostname" || name == "host-name")  // IDN: ASCII too; draft 3: host-name
    re = label + "(\\." + label + ")*";
  else if (name == "duration")  // RFC 3339 appendix A
    re = "P((\\d+D|\\d+M(\\d+D)?|\\d+Y(\\d+M(\\d+D)?)?)(" + dur_time + ")?|" + dur_time + "|\\d+W)";
  else if (name == "ipv6")  // the eight groups, or fewer around one `::` (no IPv4 tail, no zone)
    re = ipv6;
  else if (name == "uri-reference" || name == "iri-reference")  // a URI, or a relative reference
    re = "[A-Za-z][A-Za-z0-9+.-]*:" + uric + "*|" + pchar + "*([/?#]" + uric + "*)?";
  else if (name == "json-pointer")
    re = "(/([^/~]|~[01])*)*";
  else if (name == "relative-json-pointer")
    re = "(0|[1-9]\\d*)(#|(/([^/~]|~[01])*)*)";
  else if (name == "byte")  // OpenAPI: base64
    re = "([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?";
  else if (name == "binary" || name == "password")  // OpenAPI: any octets; a UI hint
    re = "[\\s\\S]*";
  else if (name == "regex")
    return regex_syntax(4);
  else if (name == "uri-template")
    return uri_template();
  else
    return std::nullopt;
  return parse_regex(re, spelling::json).full_match();
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
