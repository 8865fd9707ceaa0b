#include "recipe/structured/matcher.hpp"

#include <algorithm>

namespace deepinfer::recipe::so {

namespace {
constexpr std::size_t max_stack = 4096;
void normalize(std::vector<matcher_state::config>& v) {
  if (v.size() > 1) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
}
} // namespace

matcher::matcher(std::shared_ptr<const grammar> g, std::shared_ptr<const vocabulary> v,
                 std::shared_ptr<lexer_class_cache> cache, config cfg)
  : g_(std::move(g)), vocab_(std::move(v)), cache_(std::move(cache)), cfg_(cfg) {
  // Each lexer's row is sized on first use (lexers may be built lazily).
  local_.resize(g_->lexer_count());
  // A token can take a longer way than the shortest completion: open an array's next item, an
  // object with required keys, an optional key. Each such choice adds, in bytes, at most `jump`
  // (the most any choice of any rule state costs over that state's shortest completion), and a
  // forced token covers a byte or more; one token may chain two. Candidates are checked that
  // far from the budget, not only `cfg.horizon` tokens (a 60-byte array item overran a 16-token
  // band). Capped: in the band each step advances every allowed token.
  std::uint32_t jump = 0;
  for (std::size_t i = 0; i < g_->states(); ++i) {
    const auto st = static_cast<grammar::rstate>(i);
    const auto here = g_->min_len(st);
    const auto over = [&](std::uint32_t len) { jump = std::max(jump, len - std::min(here, len)); };
    for (auto [r, to] : g_->calls(st))
      over(g_->min_len(g_->rule_start(r)) + g_->min_len(to));
    if (const auto* l = g_->lexer_of(st))
      for (std::uint16_t t = 0; t < l->lexemes.size(); ++t)
        over(g_->min_len(g_->lex_target(st, t)));
  }
  const std::size_t widest = 2 * static_cast<std::size_t>(jump);
  horizon_ = cfg_.horizon + std::min<std::size_t>(widest, 512);
}

// Enters rule state `stack.back()`: a config for its lexer, one per rule it may call, and a
// return to the caller when it may end (the end of the root is `accept`).
void matcher::enter(std::vector<std::uint32_t> stack, std::vector<cfg_t>& out, bool& accept,
                    std::vector<std::vector<std::uint32_t>>& seen) const {
  if (stack.size() > max_stack || std::find(seen.begin(), seen.end(), stack) != seen.end())
    return;
  seen.push_back(stack);
  const auto s = stack.back();
  if (g_->lexer_index(s) >= 0)
    out.push_back({stack, 0});
  for (auto [r, to] : g_->calls(s)) {
    (void)to;
    auto inner = stack;
    inner.push_back(g_->rule_start(r));
    enter(std::move(inner), out, accept, seen);
  }
  if (g_->is_final(s)) {
    if (stack.size() == 1) {
      accept = true;
    } else {
      const auto r = g_->rule_of(s);
      stack.pop_back();
      stack.back() = g_->after_call(stack.back(), r);
      enter(std::move(stack), out, accept, seen);
    }
  }
}

void matcher::pop_lexeme(const cfg_t& c, std::int32_t qf, std::vector<cfg_t>& out, bool& accept) const {
  const auto s = c.stack.back();
  const auto& l = *g_->lexer_of(s);
  std::vector<std::vector<std::uint32_t>> seen;
  for (auto t : l.dfa().accepts(qf)) {
    auto stack = c.stack;
    stack.back() = g_->lex_target(s, t);
    enter(std::move(stack), out, accept, seen);
  }
}

void matcher::step(const std::vector<cfg_t>& in, std::uint8_t b, std::vector<cfg_t>& out) const {
  out.clear();
  for (const auto& c : in) {
    const auto& d = g_->lexer_of(c.stack.back())->dfa();
    if (auto t = d.step(c.q, b); t >= 0)
      out.push_back({c.stack, t});
    if (d.is_final(c.q)) {
      std::vector<cfg_t> next;
      bool acc = false;
      pop_lexeme(c, c.q, next, acc);
      for (auto& n : next)
        if (auto t = g_->lexer_of(n.stack.back())->dfa().step(0, b); t >= 0) {
          n.q = t;
          out.push_back(std::move(n));
        }
    }
  }
  normalize(out);
}

matcher_state matcher::start() const {
  matcher_state s;
  bool acc = false;
  std::vector<std::vector<std::uint32_t>> seen;
  enter({g_->root_start()}, s.configs_, acc, seen);
  normalize(s.configs_);
  return s;
}

bool matcher::advance_bytes(matcher_state& s, std::string_view bytes) const {
  std::vector<cfg_t> next;
  for (char ch : bytes) {
    step(s.configs_, static_cast<std::uint8_t>(ch), next);
    s.configs_.swap(next);
    if (s.configs_.empty())
      return false;
  }
  return true;
}

bool matcher::advance(matcher_state& s, token_id t) const {
  if (t == vocab_->eos()) {
    if (is_accepting(s))
      return true;
    s.configs_.clear();
    return false;
  }
  if (t < 0 || static_cast<std::size_t>(t) >= vocab_->size() || vocab_->bytes(t).empty()) {
    s.configs_.clear();
    return false;
  }
  return advance_bytes(s, vocab_->bytes(t));
}

bool matcher::is_accepting(const matcher_state& s) const {
  for (const auto& c : s.configs_) {
    if (!g_->lexer_of(c.stack.back())->dfa().is_final(c.q))
      continue;
    std::vector<cfg_t> next;
    bool acc = false;
    pop_lexeme(c, c.q, next, acc);
    if (acc)
      return true;
  }
  return false;
}

const matcher::local_class& matcher::classify(std::int32_t lex, std::int32_t q) const {
  const auto li = static_cast<std::size_t>(lex);
  const auto& d = g_->lexer_at(li).dfa();
  {
    std::lock_guard lock{local_mutex_};
    if (local_[li].empty())
      local_[li].resize(static_cast<std::size_t>(d.size()));
    if (auto& p = local_[li][static_cast<std::size_t>(q)])
      return *p;
  }
  lexer_view view{d, q, vocab_->trie().max_depth()};
  auto c = std::make_unique<local_class>(local_class{cache_->get(d, view, *vocab_), std::move(view.order)});
  std::lock_guard lock{local_mutex_};
  auto& slot = local_[li][static_cast<std::size_t>(q)];
  if (!slot)
    slot = std::move(c);
  return *slot;
}

} // namespace deepinfer::recipe::so
