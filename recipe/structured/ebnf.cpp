#include "recipe/structured/ebnf.hpp"

#include "recipe/structured/regex_parser.hpp"

#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace deepinfer::recipe::so {

std::shared_ptr<const grammar> compile_regex(std::string_view pattern, budget& b) {
  grammar_builder gb{b};
  auto p = parse_regex(pattern, spelling::raw);
  auto lx = gb.lexeme(byte_dfa::of(p.full_match(), b));
  auto r = gb.declare();
  rule_nfa n;
  auto f = n.sym(lx);
  gb.define(r, std::move(n), f);
  return gb.finish(r);
}

namespace {

struct tok {
  enum kind { name, literal, regex, punct, end } k;
  std::string text;
  bool starts_rule = false;  // a name followed by ':' or '::='
};

/// Where the name whose first character is at `i` ends.
std::size_t name_end(std::string_view s, std::size_t i) {
  std::size_t j = i + 1;
  while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_'))
    ++j;
  return j;
}

/// Whether the `?` or `!` at `i` is Lark's marker before a rule's name (`?value: ...`), not the
/// `?` that makes the item before it optional (`a? b`, `a?b`).
bool marks_rule(std::string_view s, std::size_t i) {
  if (i + 1 >= s.size() || !(std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_'))
    return false;
  std::size_t j = name_end(s, i + 1);
  while (j < s.size() && (s[j] == ' ' || s[j] == '\t'))
    ++j;
  return j < s.size() && s[j] == ':';
}

std::vector<tok> lex_ebnf(std::string_view s) {
  std::vector<tok> out;
  std::size_t i = 0;
  auto fail = [&](const std::string& why) { throw compile_error("grammar: " + why + " at byte " + std::to_string(i)); };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '#' || (c == '/' && i + 1 < s.size() && s[i + 1] == '/')) {
      while (i < s.size() && s[i] != '\n')
        ++i;
    } else if (c == '%') {
      fail("directives (%ignore, %import) are not supported");
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || ((c == '?' || c == '!') && marks_rule(s, i))) {
      if (c == '?' || c == '!')  // Lark's inline/keep markers before a rule's name: dropped
        ++i;
      const std::size_t j = name_end(s, i);
      out.push_back({tok::name, std::string{s.substr(i, j - i)}});
      i = j;
    } else if (c == '"' || c == '\'') {
      std::string v;
      std::size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) {
          const char e = s[++j];
          v.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
        } else
          v.push_back(s[j]);
      }
      if (j >= s.size())
        fail("unterminated literal");
      out.push_back({tok::literal, v});
      i = j + 1;
    } else if (c == '/') {
      std::size_t j = i + 1;
      std::string v;
      for (; j < s.size() && s[j] != '/'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size())
          v.push_back(s[j++]);
        v.push_back(s[j]);
      }
      if (j >= s.size())
        fail("unterminated /regex/");
      out.push_back({tok::regex, v});
      i = j + 1;
    } else if (s.substr(i, 3) == "::=") {
      out.push_back({tok::punct, ":"});
      i += 3;
    } else if (std::string_view{":|()[]*+?"}.find(c) != std::string_view::npos) {
      out.push_back({tok::punct, std::string(1, c)});
      ++i;
    } else {
      // The whole character (a lone byte of a UTF-8 sequence is no text a message can carry).
      std::size_t n = 1;
      while (i + n < s.size() && n < 4 && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80)
        ++n;
      fail("unexpected '" + std::string{s.substr(i, n)} + "'");
    }
  }
  for (std::size_t k = 0; k + 1 < out.size(); ++k)
    out[k].starts_rule = out[k].k == tok::name && out[k + 1].k == tok::punct && out[k + 1].text == ":";
  out.push_back({tok::end, ""});
  return out;
}

class ebnf_parser {
public:
  ebnf_parser(std::vector<tok> t, budget& b) : t_(std::move(t)), gb_(b) {}

  std::shared_ptr<const grammar> run() {
    std::vector<std::pair<std::string, std::size_t>> bodies;
    for (std::size_t k = 0; k < t_.size(); ++k)
      if (t_[k].starts_rule) {
        if (rules_.contains(t_[k].text))
          throw compile_error("grammar: rule '" + t_[k].text + "' defined twice");
        rules_.emplace(t_[k].text, gb_.declare());
        bodies.emplace_back(t_[k].text, k + 2);
      }
    if (bodies.empty())
      throw compile_error("grammar: no rule (expected `start: ...`)");
    for (auto& [name, at] : bodies) {
      pos_ = at;
      rule_nfa n;
      auto f = alternatives(n);
      if (t_[pos_].k != tok::end && !t_[pos_].starts_rule)
        throw compile_error("grammar: unexpected '" + t_[pos_].text + "' in rule '" + name + "'");
      gb_.define(rules_.at(name), std::move(n), f);
    }
    const auto start = rules_.contains("start") ? rules_.at("start") : rules_.at(bodies.front().first);
    return gb_.finish(start);
  }

private:
  bool at_punct(const char* p) const { return t_[pos_].k == tok::punct && t_[pos_].text == p; }
  bool item_follows() const {
    const auto& x = t_[pos_];
    return (x.k == tok::name && !x.starts_rule) || x.k == tok::literal || x.k == tok::regex || at_punct("(") || at_punct("[");
  }

  rule_nfa::frag alternatives(rule_nfa& n) {
    std::vector<rule_nfa::frag> alts{sequence(n)};
    while (at_punct("|")) {
      ++pos_;
      alts.push_back(sequence(n));
    }
    return alts.size() == 1 ? alts[0] : n.alt(alts);
  }

  rule_nfa::frag sequence(rule_nfa& n) {
    std::vector<rule_nfa::frag> parts;
    while (item_follows())
      parts.push_back(item(n));
    return parts.empty() ? n.empty() : n.seq(parts);
  }

  rule_nfa::frag item(rule_nfa& n) {
    auto f = atom(n);
    for (;;) {
      if (at_punct("*"))
        f = n.star(f);
      else if (at_punct("+"))
        n.eps(f.end, f.start);  // one or more: loop back (a fragment's start has no other way in)
      else if (at_punct("?"))
        f = n.opt(f);
      else
        break;
      ++pos_;
    }
    return f;
  }

  rule_nfa::frag atom(rule_nfa& n) {
    const auto x = t_[pos_++];
    switch (x.k) {
    case tok::name: {
      auto it = rules_.find(x.text);
      if (it == rules_.end())
        throw compile_error("grammar: undefined rule '" + x.text + "'");
      return n.sym(it->second);
    }
    case tok::literal:
      if (x.text.empty())
        throw compile_error("grammar: an empty literal");
      return n.sym(lexeme("l:" + x.text, rx::lit(x.text)));
    case tok::regex: return n.sym(lexeme("r:" + x.text, parse_regex(x.text, spelling::raw).full_match()));
    default: break;
    }
    if (x.text == "(" || x.text == "[") {
      auto f = alternatives(n);
      const char* close = x.text == "(" ? ")" : "]";
      if (!at_punct(close))
        throw compile_error(std::string{"grammar: missing '"} + close + "'");
      ++pos_;
      return x.text == "[" ? n.opt(f) : f;
    }
    throw compile_error("grammar: unexpected '" + x.text + "'");
  }

  symbol lexeme(const std::string& key, rx r) {
    if (auto it = lexemes_.find(key); it != lexemes_.end())
      return it->second;
    auto s = gb_.lexeme(std::move(r));
    lexemes_.emplace(key, s);
    return s;
  }

  std::vector<tok> t_;
  grammar_builder gb_;
  std::size_t pos_ = 0;
  std::map<std::string, symbol> rules_;
  std::map<std::string, symbol> lexemes_;
};

} // namespace

std::shared_ptr<const grammar> compile_ebnf(std::string_view text, budget& b) {
  return ebnf_parser{lex_ebnf(text), b}.run();
}

} // namespace deepinfer::recipe::so
