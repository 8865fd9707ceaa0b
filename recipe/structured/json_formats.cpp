// The string formats JSON Schema and OpenAPI define, as content automata (each the format's
// strings or a subset of them: every string let through is one a strict validator accepts, as
// the official suite's optional/format tests assert).

#include "recipe/structured/json_lexemes.hpp"

#include "recipe/structured/regex_parser.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace deepinfer::recipe::so::json_lex {

namespace {
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

// IPv6 (RFC 4291 text): the eight groups, or fewer around one `::` (no IPv4 tail, no zone).
std::string ipv6_text() {
  const std::string h16 = "[0-9A-Fa-f]{1,4}";
  return "(" + h16 + ":){7}" + h16 + "|(" + h16 + ":){1,7}:|(" + h16 + ":){1,6}:" + h16 + "|(" + h16 + ":){1,5}(:" +
         h16 + "){1,2}|(" + h16 + ":){1,4}(:" + h16 + "){1,3}|(" + h16 + ":){1,3}(:" + h16 + "){1,4}|(" + h16 +
         ":){1,2}(:" + h16 + "){1,5}|" + h16 + ":(:" + h16 + "){1,6}|:((:" + h16 + "){1,7}|:)";
}
// RFC 3986 URIs and references (`iri`: RFC 3987, the same grammar with the BMP's ucschar among
// the unreserved characters; the other planes and iprivate are left out, a subset). `[` `]` only
// around an IPv6 host, `%` only before two hex digits, a port only digits, at most one `@`.
std::string uri_grammar(bool iri, bool reference) {
  const std::string ucs = iri ? "\\u00A0-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF" : "";
  const std::string pct = "%[0-9A-Fa-f]{2}";
  const auto chars = [&](const std::string& extra) { return "([A-Za-z0-9._~!$&'()*+,;=" + extra + ucs + "-]|" + pct + ")"; };
  const std::string pchar = chars(":@"), segment = pchar + "*", segment_nz = pchar + "+";
  const std::string ipv6 = "(" + ipv6_text() + ")";
  const std::string authority = "(" + chars(":") + "*@)?(\\[" + ipv6 + "\\]|" + chars("") + "*)(:[0-9]*)?";
  const std::string abempty = "(/" + segment + ")*";
  const std::string absolute = "/(" + segment_nz + "(/" + segment + ")*)?";
  const std::string query = "(\\?" + chars(":@/?") + "*)?(#" + chars(":@/?") + "*)?";
  // The empty hier-part (`mailto:`, `x:?q`) is valid but left out: ajv and @cfworker/json-schema
  // refuse it, and it is the shortest URI, so a forced completion would write it.
  const std::string uri = "[A-Za-z][A-Za-z0-9+.-]*:(//" + authority + abempty + "|" + absolute + "|" + segment_nz +
                          "(/" + segment + ")*)" + query;
  if (!reference)
    return uri;
  // A relative reference: its first segment has no `:` (it would read as a scheme).
  return uri + "|(//" + authority + abempty + "|" + absolute + "|" + chars("@") + "+(/" + segment + ")*|)" + query;
}

} // namespace

bool known_format(std::string_view name) {
  static constexpr std::string_view names[] = {
    "date", "time", "date-time", "uuid", "email", "idn-email", "uri", "iri", "ipv4", "ip-address", "hostname",
    "idn-hostname", "host-name", "duration", "ipv6", "uri-reference", "iri-reference", "json-pointer",
    "relative-json-pointer", "byte", "binary", "password", "regex", "uri-template"};
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

std::optional<rx> format_limit(std::string_view name) {
  if (name == "email" || name == "idn-email")
    return parse_regex("[^@]{1,64}@[\\s\\S]*", spelling::json).full_match();
  // A host name is at most 253 characters: RFC 1034's 255 octets on the wire are a length byte
  // before each label and the root's zero byte, so two more than the dotted text.
  if (name == "hostname" || name == "idn-hostname" || name == "host-name")
    return parse_regex("[\\s\\S]{1,253}", spelling::json).full_match();
  return std::nullopt;
}

std::optional<rx> format(std::string_view name) {
  static const std::string day28 = "(0[1-9]|1\\d|2[0-8])";
  // Years 0001-9999: RFC 3339 allows 0000, but Python's `datetime` (the `jsonschema` package's
  // date check) has no year 0, and 0000-01-01 would be the forced completion.
  static const std::string year = "(000[1-9]|00[1-9]\\d|0[1-9]\\d\\d|[1-9]\\d{3})";
  // Years divisible by 4 but not by 100, or by 400: the years with a 29 February.
  static const std::string leap_year = "(\\d\\d(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)";
  static const std::string date = "(" + year + "-((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|02-" +
                                  day28 + ")|" + leap_year + "-02-29)";
  // A leap second (:60) only where it is 23:59:60 UTC, and written so (Z or a zero offset; the
  // same second at another offset is valid too but left out: a subset, one state per minute less).
  static const std::string time = "(([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d+)?([Zz]|[+-]([01]\\d|2[0-3]):[0-5]\\d)|"
                                  "23:59:60(\\.\\d+)?([Zz]|[+-]00:00))";
  static const std::string octet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
  static const std::string label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
  // A host name label (RFC 1123) without `--` as its 3rd and 4th characters: that is an A-label
  // (`xn--...`, IDNA punycode) or reserved (RFC 5891 §4.2.3.1), and punycode is left out (a subset).
  static const std::string host_label = "[A-Za-z0-9]([A-Za-z0-9]|[A-Za-z0-9-][A-Za-z0-9]|[A-Za-z0-9-]{2}[A-Za-z0-9]|"
                                        "[A-Za-z0-9-]([A-Za-z0-9][A-Za-z0-9-]|-[A-Za-z0-9])[A-Za-z0-9-]{0,58}[A-Za-z0-9])?";
  // An e-mail address's local part is dot-atoms: no dot first, last or twice in a row (quoted
  // local parts and address literals are left out), its domain two labels or more (`a@localhost`
  // is valid to RFC 5321 but not to ajv's or @cfworker's email check).
  static const std::string atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
  static const std::string dur_time = "T(\\d+H(\\d+M(\\d+S)?)?|\\d+M(\\d+S)?|\\d+S)";
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
    re = atom + "(\\." + atom + ")*@" + label + "(\\." + label + ")+";
  else if (name == "uri" || name == "iri")
    re = uri_grammar(name == "iri", false);
  else if (name == "ipv4" || name == "ip-address")  // draft 3 spelled it ip-address
    re = octet + "\\." + octet + "\\." + octet + "\\." + octet;
  else if (name == "hostname" || name == "idn-hostname" || name == "host-name")  // IDN: ASCII too; draft 3: host-name
    re = host_label + "(\\." + host_label + ")*";
  else if (name == "duration")  // RFC 3339 appendix A
    re = "P((\\d+D|\\d+M(\\d+D)?|\\d+Y(\\d+M(\\d+D)?)?)(" + dur_time + ")?|" + dur_time + "|\\d+W)";
  else if (name == "ipv6")  // the eight groups, or fewer around one `::` (no IPv4 tail, no zone)
    re = ipv6_text();
  else if (name == "uri-reference" || name == "iri-reference")
    re = uri_grammar(name == "iri-reference", true);
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

} // namespace deepinfer::recipe::so::json_lex
