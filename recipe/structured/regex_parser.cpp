#include "recipe/structured/regex_parser.hpp"

#include "recipe/structured/compile_error.hpp"

#include <cctype>
#include <string>

namespace deepinfer::recipe::so {

namespace {

class parser {
public:
  parser(std::string_view s, spelling sp) : s_(s), sp_(sp) {}

  parsed_regex run() {
    parsed_regex r;
    if (more() && peek() == '^')
      r.anchored_start = true, ++pos_;
    r.body = alternation();
    if (more())
      fail("unexpected ')'");
    if (end_anchor_)
      r.anchored_end = true;
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

  rx alternation() {
    std::vector<rx> alts{sequence()};
    while (more() && peek() == '|') {
      ++pos_;
      alts.push_back(sequence());
    }
    return rx::alt(std::move(alts));
  }

  rx sequence() {
    std::vector<rx> parts;
    while (more() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++pos_;
        // Only at the very end (or before a closing of the top level).
        if (more() && peek() != '|' && peek() != ')')
          fail("'$' not at the end");
        if (depth_ > 0 || (more() && peek() == '|'))
          fail("'$' inside a group or alternative");
        end_anchor_ = true;
        continue;
      }
      if (peek() == '^')
        fail("'^' not at the start");
      parts.push_back(quantified());
    }
    return rx::seq(std::move(parts));
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

  rx quantified() {
    rx a = atom();
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
      a = rx::rep(std::move(a), lo, hi);
    }
    return a;
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

  rx atom() {
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
      ++depth_;
      rx inner = alternation();
      --depth_;
      if (!more() || peek() != ')')
        fail("missing ')'");
      ++pos_;
      return inner;
    }
    if (c == '[')
      return char_class();
    if (c == '.') {
      ++pos_;
      return rx::set(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}), sp_);
    }
    if (c == '*' || c == '+' || c == '?')
      fail("nothing to repeat");
    if (c == '\\') {
      ++pos_;
      if (more()) {
        auto cls = class_escape(peek());
        if (!cls.empty()) {
          ++pos_;
          return rx::set(std::move(cls), sp_);
        }
      }
      return rx::cp(escaped_cp(), sp_);
    }
    return rx::cp(next_cp(), sp_);
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
  int depth_ = 0;
  bool end_anchor_ = false;
};

} // namespace

parsed_regex parse_regex(std::string_view pattern, spelling sp) { return parser{pattern, sp}.run(); }

rx search_regex(std::string_view pattern, spelling sp) {
  auto p = parse_regex(pattern, sp);
  std::vector<rx> parts;
  if (!p.anchored_start)
    parts.push_back(rx::star(rx::set(any_cp(), sp)));
  parts.push_back(std::move(p.body));
  if (!p.anchored_end)
    parts.push_back(rx::star(rx::set(any_cp(), sp)));
  return rx::seq(std::move(parts));
}

} // namespace deepinfer::recipe::so
