#include "recipe/structured/matcher.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <optional>

namespace deepinfer::recipe::so {

namespace {
void set_bit(token_mask& m, token_id t) { m[static_cast<std::size_t>(t) >> 6] |= 1ull << (t & 63); }
} // namespace

void matcher::mask_config(const cfg_t& c, token_mask& m, int depth) const {
  const auto s = c.stack.back();
  const auto li = g_->lexer_index(s);
  const auto& d = g_->lexer_at(static_cast<std::size_t>(li)).dfa();
  const auto& local = classify(li, c.q);
  const auto& cls = *local.cls;
  // 1. tokens the lexer reads whole, whatever follows.
  if (!cls.dense.empty()) {
    for (std::size_t i = 0; i < m.size(); ++i)
      m[i] |= cls.dense[i];
  } else {
    for (auto t : cls.sparse)
      set_bit(m, t);
  }
  // 2. tokens that end the lexeme inside and go on: their rest against what follows.
  for (const auto& g : cls.groups) {
    std::vector<cfg_t> next;
    bool acc = false;
    pop_lexeme(c, local.order[static_cast<std::size_t>(g.final_state)], next, acc);
    if (!next.empty())
      walk(next, g.suffixes, m);
  }
  // 3. the lexeme may end right here: whatever may follow.
  if (d.is_final(c.q) && depth < 64) {
    std::vector<cfg_t> next;
    bool acc = false;
    pop_lexeme(c, c.q, next, acc);
    if (acc)
      set_bit(m, vocab_->eos());
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    for (const auto& n : next)
      mask_config(n, m, depth + 1);
  }
}

void matcher::walk(const std::vector<cfg_t>& from, const byte_trie& t, token_mask& m) const {
  std::vector<std::vector<cfg_t>> level(t.max_depth() + 1u);
  level[0] = from;
  for (std::uint32_t i = 1; i < t.size();) {
    const auto d = t.depth(i);
    step(level[d - 1], t.byte(i), level[d]);
    if (level[d].empty()) {
      i = t.skip(i);
      continue;
    }
    for (auto p = t.tokens_begin(i); p != t.tokens_end(i); ++p)
      set_bit(m, *p);
    ++i;
  }
}

token_mask matcher::allowed_tokens(const matcher_state& s) const {
  token_mask m(vocab_->mask_words(), 0);
  for (const auto& c : s.configs_)
    mask_config(c, m, 0);
  return m;
}

// The smallest bytes among the shortest completions from grammar state `st` (shortlex order:
// the whole completion compared, whether it starts with a call or a lexeme). Exactness is what
// keeps the budget's forced completion stable: after its first token is read, the rest of it is
// again the smallest shortest completion, so it never switches to another, equally short one
// that tokenizes longer (taken by lexeme length or grammar order, `{"timezone.convert"...}` gave
// way to `{"calculate_emission_savings"...}` a token later and the budget ran out).
std::optional<std::string> matcher::shortest_rest(grammar::rstate st, rest_memo& memo) const {
  if (auto it = memo.find(st); it != memo.end())
    return it->second;  // nullopt while in progress: a call that returns here without a byte
  if (g_->is_final(st) && g_->min_len(st) == 0)
    return memo[st] = std::string{};
  memo[st] = std::nullopt;
  std::optional<std::string> best;
  const auto offer = [&](std::string w) {
    if (!best || w < *best)
      best = std::move(w);
  };
  const std::uint64_t need = g_->min_len(st);
  for (auto [r, to] : g_->calls(st))
    if (std::uint64_t{g_->min_len(g_->rule_start(r))} + g_->min_len(to) == need)
      if (auto head = shortest_rest(g_->rule_start(r), memo))
        if (auto tail = shortest_rest(to, memo))
          offer(*head + *tail);
  const auto* l = g_->lexer_of(st);
  for (std::uint16_t t = 0; l != nullptr && t < l->lexemes.size(); ++t) {
    const auto& lx = g_->lexeme(l->lexemes[t]);
    const auto to = g_->lex_target(st, t);
    if (lx.dist(0) >= 0 && static_cast<std::uint64_t>(lx.dist(0)) + g_->min_len(to) == need)
      if (auto tail = shortest_rest(to, memo))
        offer(lx.shortest_from(0) + *tail);
  }
  memo[st] = best;
  return best;
}

// Bytes of a shortest completion of config `c` (and the smallest such bytes into `out`).
std::uint64_t matcher::completion_cost(const cfg_t& c, std::string* out) const {
  constexpr std::uint64_t inf = std::numeric_limits<std::uint64_t>::max() / 4;
  // Below the top frame, each caller finishes from where the call returns.
  std::uint64_t below = 0;
  for (std::size_t i = c.stack.size() - 1; i > 0; --i)
    below += g_->min_len(g_->after_call(c.stack[i - 1], g_->rule_of(c.stack[i])));
  const auto s = c.stack.back();
  const auto& d = g_->lexer_of(s)->dfa();
  // BFS inside the lexer from q to every final state; in class order, so each state is first
  // reached by the smallest of its shortest paths.
  std::vector<std::int32_t> dist(static_cast<std::size_t>(d.size()), -1), from(dist.size(), -1);
  std::vector<std::uint8_t> via(dist.size(), 0);
  std::deque<std::int32_t> queue{c.q};
  dist[static_cast<std::size_t>(c.q)] = 0;
  std::uint64_t best = inf;
  std::vector<std::pair<std::int32_t, std::uint16_t>> ends;  // (final state, lexeme) at `best`
  while (!queue.empty()) {
    auto q = queue.front();
    queue.pop_front();
    if (d.is_final(q))
      for (auto t : d.accepts(q)) {
        auto cost = static_cast<std::uint64_t>(dist[q]) + g_->min_len(g_->lex_target(s, t));
        if (cost < best)
          best = cost, ends.clear();
        if (cost == best)
          ends.emplace_back(q, t);
      }
    for (std::uint32_t k = 0; k < d.classes(); ++k)  // in class order = smallest bytes first
      if (auto n = d.step_class(q, k); n >= 0 && dist[n] < 0) {
        dist[n] = dist[q] + 1, from[n] = q, via[n] = d.class_byte(k);
        queue.push_back(n);
      }
  }
  if (ends.empty())
    return inf;
  if (out != nullptr) {
    rest_memo memo;
    std::optional<std::string> pick;
    for (auto [f, t] : ends) {
      std::string w;
      for (auto q = f; q != c.q; q = from[q])
        w.push_back(static_cast<char>(via[q]));
      std::reverse(w.begin(), w.end());
      if (auto tail = shortest_rest(g_->lex_target(s, t), memo))
        if (w += *tail; !pick || w < *pick)
          pick = std::move(w);
    }
    *out += pick.value_or(std::string{});
    // Then each frame's rest, innermost first (the same for every pick above).
    for (std::size_t i = c.stack.size() - 1; i > 0; --i)
      *out += shortest_rest(g_->after_call(c.stack[i - 1], g_->rule_of(c.stack[i])), memo).value_or(std::string{});
  }
  return best + below;
}

std::string matcher::shortest_completion_bytes(const matcher_state& s) const {
  if (is_accepting(s))
    return {};
  std::uint64_t cost = std::numeric_limits<std::uint64_t>::max();
  std::vector<const cfg_t*> best;
  for (const auto& c : s.configs_)
    if (auto k = completion_cost(c, nullptr); k < cost)
      cost = k, best.assign(1, &c);
    else if (k == cost)
      best.push_back(&c);
  // Equally short completions of different configs: the smallest bytes, whatever the configs'
  // order. A token later the configs are ordered otherwise; a tie taken by order could then
  // switch to another completion that tokenizes longer ("regular" vs "play"+"off"), and a
  // budget forced down to its last tokens would overrun.
  std::string out;
  for (const auto* c : best) {
    std::string w;
    completion_cost(*c, &w);
    if (c == best.front() || w < out)
      out = std::move(w);
  }
  return out;
}

std::vector<token_id> matcher::forced_completion(const matcher_state& s) const {
  const auto w = shortest_completion_bytes(s);
  std::vector<token_id> out;
  const auto& t = vocab_->trie();
  for (std::size_t pos = 0; pos < w.size();) {
    // The longest token that is a prefix of the rest (every byte is a token of a byte-level BPE).
    std::uint32_t node = 0;
    token_id best = -1;
    std::size_t len = 0;
    for (std::size_t k = pos; k < w.size(); ++k) {
      std::uint32_t child = node + 1, found = 0;
      while (child < t.skip(node)) {
        if (t.byte(child) == static_cast<std::uint8_t>(w[k])) {
          found = child;
          break;
        }
        child = t.skip(child);
      }
      if (found == 0)
        break;
      node = found;
      if (t.tokens_begin(node) != t.tokens_end(node))
        best = *t.tokens_begin(node), len = k + 1 - pos;
    }
    if (best < 0)
      break;  // a byte no token spells: cannot force further
    out.push_back(best);
    pos += len;
  }
  return out;
}

token_mask matcher::allowed_tokens(const matcher_state& s, std::size_t tokens_left) const {
  const auto forced = forced_completion(s);
  if (tokens_left <= forced.size()) {
    token_mask m(vocab_->mask_words(), 0);
    if (forced.empty())
      set_bit(m, vocab_->eos());
    else
      set_bit(m, forced.front());
    return m;
  }
  auto m = allowed_tokens(s);
  if (tokens_left > forced.size() + horizon_)
    return m;
  // Near the end: keep a token only if its own forced completion still fits.
  std::map<std::vector<cfg_t>, bool> fits;
  // A token the lexer of a lone config reads without reaching a final state (most tokens inside
  // a string) only moves that lexer's state: one completion per state reached, found by walking
  // the token's bytes, instead of an advance per token (~25 ms a step over a whole vocabulary).
  const cfg_t* lone = s.configs_.size() == 1 ? &s.configs_.front() : nullptr;
  const byte_dfa* lexer = lone != nullptr ? &g_->lexer_of(lone->stack.back())->dfa() : nullptr;
  std::map<std::int32_t, bool> fits_at;
  std::int32_t last_q = -1;
  bool last_fits = false;
  const auto drop = [&](token_id t) { m[static_cast<std::size_t>(t) >> 6] &= ~(1ull << (t & 63)); };
  for_each_token(token_mask(m), [&](token_id t) {  // (a copy: `m` loses bits on the way)
    if (t == vocab_->eos())
      return;
    if (lexer != nullptr) {
      auto q = lone->q;
      for (const auto b : vocab_->bytes(t)) {
        q = lexer->step(q, static_cast<std::uint8_t>(b));
        if (q < 0 || lexer->is_final(q))
          break;
      }
      if (q >= 0 && !lexer->is_final(q)) {
        if (q != last_q) {  // (most land in one state: a string's inside)
          auto [at, fresh] = fits_at.emplace(q, false);
          if (fresh) {
            auto moved = s;
            moved.configs_.front().q = q;
            at->second = forced_completion(moved).size() + 1 <= tokens_left;
          }
          last_q = q, last_fits = at->second;
        }
        if (!last_fits)
          drop(t);
        return;
      }
    }
    auto next = s;
    advance(next, t);
    auto [it, fresh] = fits.emplace(next.configs_, false);
    if (fresh)
      it->second = forced_completion(next).size() + 1 <= tokens_left;
    if (!it->second)
      drop(t);
  });
  return m;
}

} // namespace deepinfer::recipe::so
