#include "recipe/structured/regex_parser.hpp"

#include "recipe/structured/compile_error.hpp"

#include <cctype>
#include <string>

namespace deepinfer::recipe::so {

namespace {

bool nullable(const rx& r) {
  switch (r.k) {
  case rx::kind::empty: return true;
  case rx::kind::nothing:
  case rx::kind::set: return false;
  case rx::kind::seq:
    for (const auto& k : r.kids)
      if (!nullable(k))
        return false;
    return true;
  case rx::kind::alt:
    for (const auto& k : r.kids)
      if (nullable(k))
        return true;
    return false;
  case rx::kind::rep: return r.min == 0 || nullable(r.kids[0]);
  }
  return false;
}

/// What a part of a pattern matches, by the anchors its paths pass: `at[s][e]` holds the strings
/// matched along paths that pass a '^' (s = 1) or none (s = 0), and a '$' (e = 1) or none. A
/// path is kept only when its '^'s come before its first character and its '$'s after its
/// last: anchors are zero-width, so anything else could never match.
struct anchored {
  rx at[2][2] = {{rx::none(), rx::none()}, {rx::none(), rx::none()}};

  static anchored plain(rx r) {
    anchored a;
    a.at[0][0] = std::move(r);
    return a;
  }
  bool has_anchors() const {
    return at[0][1].k != rx::kind::nothing || at[1][0].k != rx::kind::nothing || at[1][1].k != rx::kind::nothing;
  }

  /// `a` then `b`.
  static anchored seq(const anchored& a, const anchored& b) {
    if (!a.has_anchors() && !b.has_anchors())
      return plain(rx::seq({a.at[0][0], b.at[0][0]}));
    std::vector<rx> out[2][2];
    for (int s = 0; s < 2; ++s)
      for (int e = 0; e < 2; ++e)
        out[s][e].push_back(rx::seq({a.at[s][0], b.at[0][e]}));  // a passes no '$', b no '^'
    if (nullable(b.at[0][0]) || nullable(b.at[0][1]))  // a's '$', then b matching nothing
      for (int s = 0; s < 2; ++s)
        out[s][1].push_back(a.at[s][1]);
    if (nullable(a.at[0][0]) || nullable(a.at[1][0]))  // a matching nothing, then b's '^'
      for (int e = 0; e < 2; ++e)
        out[1][e].push_back(b.at[1][e]);
    if ((nullable(a.at[0][1]) || nullable(a.at[1][1])) && (nullable(b.at[1][0]) || nullable(b.at[1][1])))
      out[1][1].push_back(rx::eps());  // a's '$' and b's '^' with nothing between or around
    anchored r;
    for (int s = 0; s < 2; ++s)
      for (int e = 0; e < 2; ++e)
        r.at[s][e] = rx::alt(std::move(out[s][e]));
    return r;
  }

  static anchored alt(std::vector<anchored> parts) {
    anchored r;
    for (int s = 0; s < 2; ++s)
      for (int e = 0; e < 2; ++e) {
        std::vector<rx> kids;
        for (auto& p : parts)
          kids.push_back(std::move(p.at[s][e]));
        r.at[s][e] = rx::alt(std::move(kids));
      }
    return r;
  }

  /// Any number of `a`: the one pass with a '^' comes first among those that match something,
  /// the one with a '$' last, and one with both is alone.
  static anchored star(const anchored& a) {
    const rx body = rx::star(a.at[0][0]);
    anchored r;
    r.at[0][0] = body;
    r.at[1][0] = rx::seq({a.at[1][0], body});
    r.at[0][1] = rx::seq({body, a.at[0][1]});
    r.at[1][1] = rx::alt({rx::seq({a.at[1][0], body, a.at[0][1]}), a.at[1][1]});
    return r;
  }
};

class parser {
public:
  parser(std::string_view s, spelling sp) : s_(s), sp_(sp) {}

  parsed_regex run() {
    anchored a = alternation();
    if (more())
      fail("unexpected ')'");
    parsed_regex r;
    r.unanchored = std::move(a.at[0][0]);
    r.from_start = std::move(a.at[1][0]);
    r.to_end = std::move(a.at[0][1]);
    r.whole = std::move(a.at[1][1]);
    return r;
  }

private:
  [[noreturn]] void fail(const std::string& why) {
    throw compile_error("unsupported regex /" + std::string{s_} + "/: " + why);
  }
  bool more() const { return pos_ < s_.size(); }
  char peek() const { return s_[pos_]; }

  std::uint32_t next_cp() {
    auto b = static_cast<unsigned char>(s_[pos_++]);
    if (b < 0x80)
      return b;
    int n = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
    std::uint32_t c = b & (0x3F >> n);
    for (int i = 0; i < n && more(); ++i)
      c = (c << 6) | (static_cast<unsigned char>(s_[pos_++]) & 0x3F);
    return c;
  }

  anchored alternation() {
    std::vector<anchored> alts{sequence()};
    while (more() && peek() == '|') {
      ++pos_;
      alts.push_back(sequence());
    }
    return alts.size() == 1 ? std::move(alts[0]) : anchored::alt(std::move(alts));
  }

  anchored sequence() {
    anchored out = anchored::plain(rx::eps());
    std::vector<rx> run;  // anchor-free parts not yet joined
    auto flush = [&] {
      if (!run.empty())
        out = anchored::seq(out, anchored::plain(rx::seq(std::move(run))));
      run.clear();
    };
    while (more() && peek() != '|' && peek() != ')') {
      if (peek() == '^' || peek() == '$') {
        anchored a;
        a.at[peek() == '^' ? 1 : 0][peek() == '$' ? 1 : 0] = rx::eps();
        ++pos_;
        flush();
        out = anchored::seq(out, a);
        continue;
      }
      anchored q = quantified();
      if (q.has_anchors()) {
        flush();
        out = anchored::seq(out, q);
      } else {
        run.push_back(std::move(q.at[0][0]));
      }
    }
    flush();
    return out;
  }

  std::uint32_t number() {
    std::uint32_t v = 0;
    bool any = false;
    while (more() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<std::uint32_t>(peek() - '0');
      if (v > 100000)
        fail("repetition count too large");
      ++pos_, any = true;
    }
    if (!any)
      fail("expected a number");
    return v;
  }

  anchored quantified() {
    anchored a = atom();
    while (more()) {
      std::uint32_t lo = 0, hi = 0;
      const char c = peek();
      if (c == '*')
        lo = 0, hi = rx::unbounded, ++pos_;
      else if (c == '+')
        lo = 1, hi = rx::unbounded, ++pos_;
      else if (c == '?')
        lo = 0, hi = 1, ++pos_;
      else if (c == '{') {
        const auto save = pos_;
        ++pos_;
        if (!more() || peek() < '0' || peek() > '9') {
          pos_ = save;
          return a;  // a literal '{' follows
        }
        lo = number();
        hi = lo;
        if (more() && peek() == ',') {
          ++pos_;
          hi = more() && peek() == '}' ? rx::unbounded : number();
        }
        if (!more() || peek() != '}')
          fail("bad {n,m}");
        ++pos_;
      } else
        break;
      if (more() && peek() == '?')
        ++pos_;  // lazy: the same language
      a = repeated(std::move(a), lo, hi);
    }
    return a;
  }

  /// `a` lo..hi times. With anchors inside, written out copy by copy (a few at most: an anchor
  /// can be passed once before the first character and once after the last).
  anchored repeated(anchored a, std::uint32_t lo, std::uint32_t hi) {
    if (!a.has_anchors())
      return anchored::plain(rx::rep(std::move(a.at[0][0]), lo, hi));
    constexpr std::uint32_t most = 16;
    if (lo > most || (hi != rx::unbounded && hi > most))
      fail("an anchor inside a repetition of more than " + std::to_string(most));
    anchored out = anchored::plain(rx::eps());
    for (std::uint32_t i = 0; i < lo; ++i)
      out = anchored::seq(out, a);
    if (hi == rx::unbounded)
      return anchored::seq(out, anchored::star(a));
    const anchored maybe = anchored::alt({a, anchored::plain(rx::eps())});
    for (std::uint32_t i = lo; i < hi; ++i)
      out = anchored::seq(out, maybe);
    return out;
  }

  std::vector<cp_range> class_escape(char c) {
    switch (c) {
    case 'd': return {{'0', '9'}};
    case 'D': return complement({{'0', '9'}});
    case 'w': return normalize({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
    case 'W': return complement(normalize({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}));
    case 's': return space();
    case 'S': return complement(space());
    default: return {};
    }
  }
  static std::vector<cp_range> space() {
    return normalize({{9, 13}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                      {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}});
  }

  // One escaped code point after '\' (not a class escape).
  std::uint32_t escaped_cp() {
    if (!more())
      fail("trailing '\\'");
    const char c = s_[pos_++];
    switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'f': return '\f';
    case 'v': return '\v';
    case '0': return 0;
    case 'x': case 'u': {
      const int n = c == 'x' ? 2 : 4;
      std::uint32_t v = 0;
      for (int i = 0; i < n; ++i) {
        if (!more() || !std::isxdigit(static_cast<unsigned char>(peek())))
          fail("bad \\x or \\u escape");
        const char h = s_[pos_++];
        v = v * 16 + static_cast<std::uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      return v;
    }
    default:
      if ((c >= '1' && c <= '9') || c == 'b' || c == 'B' || c == 'k' || c == 'p' || c == 'P' || c == 'c')
        fail(std::string{"\\"} + c + " is not supported");
      if (std::isalnum(static_cast<unsigned char>(c)))
        fail(std::string{"unknown escape \\"} + c);
      --pos_;
      return next_cp();
    }
  }

  anchored atom() {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      if (more() && peek() == '?') {
        ++pos_;
        if (more() && peek() == ':')
          ++pos_;
        else if (more() && peek() == '<' && pos_ + 1 < s_.size() && s_[pos_ + 1] != '=' && s_[pos_ + 1] != '!') {
          while (more() && peek() != '>')
            ++pos_;
          ++pos_;
        } else
          fail("lookaround is not supported");
      }
      anchored inner = alternation();
      if (!more() || peek() != ')')
        fail("missing ')'");
      ++pos_;
      return inner;
    }
    if (c == '[')
      return anchored::plain(char_class());
    if (c == '.') {
      ++pos_;
      return anchored::plain(rx::set(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}), sp_));
    }
    if (c == '*' || c == '+' || c == '?')
      fail("nothing to repeat");
    if (c == '\\') {
      ++pos_;
      if (more()) {
        auto cls = class_escape(peek());
        if (!cls.empty()) {
          ++pos_;
          return anchored::plain(rx::set(std::move(cls), sp_));
        }
      }
      return anchored::plain(rx::cp(escaped_cp(), sp_));
    }
    return anchored::plain(rx::cp(next_cp(), sp_));
  }

  rx char_class() {
    ++pos_;  // '['
    bool neg = false;
    if (more() && peek() == '^')
      neg = true, ++pos_;
    std::vector<cp_range> r;
    bool first = true;
    while (more() && (peek() != ']' || first)) {
      first = false;
      std::uint32_t lo;
      if (peek() == '\\') {
        ++pos_;
        if (!more())
          fail("bad class");
        auto cls = class_escape(peek());
        if (!cls.empty()) {
          ++pos_;
          r.insert(r.end(), cls.begin(), cls.end());
          continue;
        }
        if (peek() == 'b')
          ++pos_, lo = '\b';
        else
          lo = escaped_cp();
      } else {
        lo = next_cp();
      }
      std::uint32_t hi = lo;
      if (pos_ + 1 < s_.size() && peek() == '-' && s_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          if (more() && !class_escape(peek()).empty())
            fail("class escape as a range end");
          hi = escaped_cp();
        } else
          hi = next_cp();
        if (hi < lo)
          fail("range out of order");
      }
      r.push_back({lo, hi});
    }
    if (!more())
      fail("missing ']'");
    ++pos_;
    r = normalize(std::move(r));
    return rx::set(neg ? complement(r) : r, sp_);
  }

  std::string_view s_;
  spelling sp_;
  std::size_t pos_ = 0;
};

} // namespace

parsed_regex parse_regex(std::string_view pattern, spelling sp) { return parser{pattern, sp}.run(); }

namespace {

/// Just past the ')' that closes the group opened at `open`, or npos: escapes and classes hold
/// no parenthesis that counts.
std::size_t group_end(std::string_view p, std::size_t open) {
  int depth = 1;
  std::size_t j = open + 1;
  while (j < p.size() && depth > 0) {
    const char c = p[j];
    if (c == '\\') {
      j += 2;
      continue;
    }
    if (c == '[') {
      ++j;
      if (j < p.size() && p[j] == '^')
        ++j;
      if (j < p.size() && p[j] == ']')
        ++j;  // a ']' first in a class is a character
      while (j < p.size() && p[j] != ']')
        j += p[j] == '\\' ? 2 : 1;
      ++j;
      continue;
    }
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    ++j;
  }
  return depth == 0 && j <= p.size() ? j : std::string_view::npos;
}

/// `^((?!X).)*$` (or `(?:`, `+`, several `(?!...)` in a row): "a line that contains no X",
/// where X matches no empty string (else every position would match it): the line minus the
/// strings X is found in.
std::optional<leading_lookaheads> line_without(std::string_view p) {
  std::size_t pos = 0;
  if (p.substr(0, 5) == "^((?!")
    pos = 2;
  else if (p.substr(0, 7) == "^(?:(?!")
    pos = 4;
  else
    return std::nullopt;
  leading_lookaheads out;
  while (p.substr(pos, 3) == "(?!") {
    const auto end = group_end(p, pos);
    if (end == std::string_view::npos)
      return std::nullopt;
    const auto body = std::string{p.substr(pos + 3, end - 1 - (pos + 3))};
    if (nullable(parse_regex(body, spelling::raw).full_match()))
      return std::nullopt;
    out.must_not.push_back("(?:" + body + ")");
    pos = end;
  }
  const auto tail = p.substr(pos);
  if (tail != ".)*$" && tail != ".)+$")
    return std::nullopt;
  out.rest = tail[2] == '*' ? "^.*$" : "^.+$";
  return out;
}

} // namespace

std::optional<leading_lookaheads> split_leading_lookaheads(std::string_view p) {
  if (auto line = line_without(p))
    return line;
  if (p.size() < 4 || p[0] != '^')
    return std::nullopt;
  leading_lookaheads out;
  std::size_t pos = 1;
  while (p.substr(pos, 3) == "(?=" || p.substr(pos, 3) == "(?!") {
    const auto j = group_end(p, pos);
    if (j == std::string_view::npos)
      return std::nullopt;  // unbalanced: the parser says what is wrong
    auto body = "^(?:" + std::string{p.substr(pos + 3, j - 1 - (pos + 3))} + ")";
    (p[pos + 2] == '=' ? out.must : out.must_not).push_back(std::move(body));
    pos = j;
  }
  if (pos == 1)
    return std::nullopt;
  out.rest = "^" + std::string{p.substr(pos)};
  return out;
}

rx parsed_regex::full_match() const {
  return rx::alt({unanchored, from_start, to_end, whole});
}

rx search_regex(std::string_view pattern, spelling sp) {
  auto p = parse_regex(pattern, sp);
  const rx any = rx::star(rx::set(any_cp(), sp));
  return rx::alt({rx::seq({any, std::move(p.unanchored), any}), rx::seq({std::move(p.from_start), any}),
                  rx::seq({any, std::move(p.to_end)}), std::move(p.whole)});
}

} // namespace deepinfer::recipe::so
