#include "recipe/structured/grammar.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <queue>

namespace deepinfer::recipe::so {

std::int32_t rule_nfa::add() {
  states.emplace_back();
  return static_cast<std::int32_t>(states.size()) - 1;
}
void rule_nfa::edge(std::int32_t from, symbol s, std::int32_t to) { states[from].edges.emplace_back(s, to); }
void rule_nfa::eps(std::int32_t from, std::int32_t to) { states[from].eps.push_back(to); }
rule_nfa::frag rule_nfa::sym(symbol s) {
  frag f{add(), add()};
  edge(f.start, s, f.end);
  return f;
}
rule_nfa::frag rule_nfa::empty() {
  frag f{add(), add()};
  eps(f.start, f.end);
  return f;
}
rule_nfa::frag rule_nfa::seq(std::span<const frag> parts) {
  if (parts.empty())
    return empty();
  for (std::size_t i = 1; i < parts.size(); ++i)
    eps(parts[i - 1].end, parts[i].start);
  return {parts.front().start, parts.back().end};
}
rule_nfa::frag rule_nfa::alt(std::span<const frag> parts) {
  frag f{add(), add()};
  for (auto p : parts) {
    eps(f.start, p.start);
    eps(p.end, f.end);
  }
  return f;
}
rule_nfa::frag rule_nfa::opt(frag f) {
  eps(f.start, f.end);
  return f;
}
rule_nfa::frag rule_nfa::star(frag f) {
  frag g{add(), add()};
  eps(g.start, f.start);
  eps(f.end, g.start);
  eps(g.start, g.end);
  return g;
}

grammar::rstate grammar::after_call(rstate caller, std::uint32_t r) const noexcept {
  for (auto [rule, to] : calls(caller))
    if (rule == r)
      return to;
  return caller;  // unreachable by precondition
}

std::size_t grammar::bytes() const noexcept {
  std::size_t n = rule_of_.size() * 24 + calls_.size() * 8 + lex_targets_.size() * 4;
  for (auto& l : lexers_)
    if (l->built())
      n += l->dfa().bytes();
  for (std::size_t i = 0; i < lexemes_.size(); ++i)
    if (!makers_[i] || lexeme_built_[i].load(std::memory_order_acquire))
      n += lexemes_[i].bytes();
  return n;
}

const byte_dfa& lexer::dfa() const {
  if (!built())
    std::call_once(once_, [this] { build(); });
  return dfa_;
}

void lexer::build() const {
  if (lexemes.size() == 1) {
    dfa_ = g_->lexeme(lexemes[0]);
  } else {
    std::vector<const byte_dfa*> parts;
    for (auto id : lexemes)
      parts.push_back(&g_->lexeme(id));
    // Bounded by the parts' sizes (see the class comment), so no deadline or state cap: the
    // compile that admitted the parts admitted this union.
    auto unbounded = budget::unbounded();
    dfa_ = byte_dfa::unite(parts, unbounded);
  }
  built_.store(true, std::memory_order_release);
}

const byte_dfa& grammar::lexeme(std::uint32_t i) const {
  if (makers_[i] && !lexeme_built_[i].load(std::memory_order_acquire))
    std::call_once(lexeme_once_[i], [&] {
      lexemes_[i] = makers_[i]();
      lexeme_built_[i].store(true, std::memory_order_release);
    });
  return lexemes_[i];
}

symbol grammar_builder::lazy_lexeme(std::function<byte_dfa()> make, std::int32_t dist0, lexeme_shape shape) {
  lexemes_.emplace_back();
  shapes_.push_back(shape);
  makers_.push_back(std::move(make));
  dist0_.push_back(dist0);
  return {symbol::kind::lexeme, static_cast<std::uint32_t>(lexemes_.size() - 1)};
}

symbol grammar_builder::lexeme(byte_dfa d, lexeme_shape shape) {
  if (!d.empty() && d.is_final(0))
    throw compile_error("a terminal matches the empty string");
  const auto dist0 = d.empty() ? -1 : d.dist(0);
  lexemes_.push_back(std::move(d));
  shapes_.push_back(shape);
  makers_.emplace_back();
  dist0_.push_back(dist0);
  return {symbol::kind::lexeme, static_cast<std::uint32_t>(lexemes_.size() - 1)};
}

symbol grammar_builder::declare() {
  rules_.emplace_back();
  return {symbol::kind::rule, static_cast<std::uint32_t>(rules_.size() - 1)};
}

void grammar_builder::define(symbol rule, rule_nfa nfa, rule_nfa::frag f) {
  rules_[rule.id].nfa = std::move(nfa);
  rules_[rule.id].f = f;
}

namespace {

struct rule_dfa {
  std::vector<std::vector<std::pair<symbol, std::int32_t>>> edges;
  std::vector<std::uint8_t> final;
};

// The states a closure has reached, kept across calls (reached: stamp == gen), so that a
// closure costs the states it reaches, not a cleared flag per state of the rule's NFA.
void closure(const rule_nfa& n, std::vector<std::int32_t>& set) {
  thread_local std::vector<std::uint32_t> stamp;
  thread_local std::uint32_t gen = 0;
  if (stamp.size() < n.states.size())
    stamp.resize(n.states.size(), 0);
  if (++gen == 0) {
    std::fill(stamp.begin(), stamp.end(), 0u);
    gen = 1;
  }
  auto mark = [&](std::int32_t s) {
    auto& m = stamp[static_cast<std::size_t>(s)];
    return m == gen ? false : (m = gen, true);
  };
  std::vector<std::int32_t> stack;
  for (auto s : set)
    if (mark(s))
      stack.push_back(s);
  while (!stack.empty()) {
    auto s = stack.back();
    stack.pop_back();
    for (auto t : n.states[s].eps)
      if (mark(t))
        set.push_back(t), stack.push_back(t);
  }
  std::sort(set.begin(), set.end());
}

rule_dfa determinize(const rule_nfa& n, rule_nfa::frag f, budget& b) {
  rule_dfa d;
  std::map<std::vector<std::int32_t>, std::int32_t> ids;
  std::vector<std::vector<std::int32_t>> sets{{f.start}};
  closure(n, sets[0]);
  ids.emplace(sets[0], 0);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    b.tick();
    b.states(sets.size());
    const auto cur = sets[i];
    std::map<symbol, std::vector<std::int32_t>> by_sym;
    for (auto s : cur)
      for (auto [sym, to] : n.states[s].edges)
        by_sym[sym].push_back(to);
    d.final.push_back(std::binary_search(cur.begin(), cur.end(), f.end) ? 1 : 0);
    std::vector<std::pair<symbol, std::int32_t>> out;
    for (auto& [sym, tgt] : by_sym) {
      closure(n, tgt);
      tgt.erase(std::unique(tgt.begin(), tgt.end()), tgt.end());
      auto [it, fresh] = ids.emplace(tgt, static_cast<std::int32_t>(sets.size()));
      if (fresh)
        sets.push_back(tgt);
      out.emplace_back(sym, it->second);
    }
    d.edges.push_back(std::move(out));
  }
  return d;
}

constexpr std::uint32_t inf = std::numeric_limits<std::uint32_t>::max() / 4;

} // namespace

std::shared_ptr<const grammar> grammar_builder::finish(symbol root) {
  auto g = std::make_shared<grammar>();
  g->root_ = root.id;
  // 1. determinize every rule and number the states globally.
  std::vector<rule_dfa> dfas;
  for (auto& r : rules_) {
    if (r.f.start < 0)
      throw compile_error("internal: a rule was declared but never defined");
    dfas.push_back(determinize(r.nfa, r.f, *budget_));
    g->rule_start_.push_back(static_cast<grammar::rstate>(g->rule_of_.size()));
    for (std::size_t s = 0; s < dfas.back().final.size(); ++s) {
      g->rule_of_.push_back(static_cast<std::uint32_t>(dfas.size() - 1));
      g->final_.push_back(dfas.back().final[s]);
    }
  }
  const std::size_t n = g->rule_of_.size();
  budget_->states(n);
  auto global = [&](std::uint32_t r, std::int32_t local) { return g->rule_start_[r] + static_cast<std::uint32_t>(local); };
  // 2. shortest completion of every state (a fixpoint); what cannot complete is dropped.
  std::vector<std::uint32_t> ml(n, inf);
  auto sym_len = [&](symbol s) -> std::uint32_t {
    if (s.k == symbol::kind::lexeme)
      return dist0_[s.id] < 0 ? inf : static_cast<std::uint32_t>(dist0_[s.id]);
    return ml[g->rule_start_[s.id]];
  };
  // Knuth's generalisation of Dijkstra: a state's length is the least over its edges of
  // (symbol length + target length), both already final when the state is popped, so every
  // state settles once. (A round-robin fixpoint here was O(rules x states) on deep $ref chains:
  // the largest share of compile time on Kubernetes schemas.)
  struct use {
    std::uint32_t from;  // global state whose length the edge bounds
    symbol sym;
    std::uint32_t to;    // global target
  };
  std::vector<use> uses;
  std::vector<std::uint32_t> dep_off(n + 1, 0);
  for (std::uint32_t r = 0; r < dfas.size(); ++r)
    for (std::size_t s = 0; s < dfas[r].final.size(); ++s)
      for (auto [sym, to] : dfas[r].edges[s]) {
        ++dep_off[global(r, to) + 1];
        if (sym.k == symbol::kind::rule)
          ++dep_off[g->rule_start_[sym.id] + 1];
      }
  for (std::size_t i = 0; i < n; ++i)
    dep_off[i + 1] += dep_off[i];
  uses.resize(dep_off[n]);
  {
    auto fill = dep_off;
    for (std::uint32_t r = 0; r < dfas.size(); ++r)
      for (std::size_t s = 0; s < dfas[r].final.size(); ++s)
        for (auto [sym, to] : dfas[r].edges[s]) {
          const use u{global(r, static_cast<std::int32_t>(s)), sym, global(r, to)};
          uses[fill[u.to]++] = u;
          if (sym.k == symbol::kind::rule)
            uses[fill[g->rule_start_[sym.id]]++] = u;
        }
  }
  using item = std::pair<std::uint32_t, std::uint32_t>;  // (length, state)
  std::priority_queue<item, std::vector<item>, std::greater<>> heap;
  for (std::uint32_t r = 0; r < dfas.size(); ++r)
    for (std::size_t s = 0; s < dfas[r].final.size(); ++s)
      if (dfas[r].final[s]) {
        const auto gs = global(r, static_cast<std::int32_t>(s));
        ml[gs] = 0;
        heap.emplace(0, gs);
      }
  while (!heap.empty()) {
    const auto [len, t] = heap.top();
    heap.pop();
    if (len != ml[t])
      continue;
    budget_->tick();
    for (auto i = dep_off[t]; i < dep_off[t + 1]; ++i) {
      const auto& u = uses[i];
      const auto a = sym_len(u.sym), b = ml[u.to];
      if (a < inf && b < inf && a + b < ml[u.from]) {
        ml[u.from] = a + b;
        heap.emplace(a + b, u.from);
      }
    }
  }
  if (ml[g->rule_start_[root.id]] >= inf)
    throw compile_error("the constraint admits no value (contradictory keywords)");
  g->min_len_ = ml;
  // 3. left recursion: a rule that calls itself before reading a byte.
  {
    std::vector<std::vector<std::uint32_t>> callees(dfas.size());
    for (std::uint32_t r = 0; r < dfas.size(); ++r) {
      std::vector<std::int32_t> stack{0};
      std::vector<char> seen(dfas[r].final.size(), 0);
      seen[0] = 1;
      while (!stack.empty()) {
        auto s = stack.back();
        stack.pop_back();
        for (auto [sym, to] : dfas[r].edges[s]) {
          if (sym.k != symbol::kind::rule || sym_len(sym) >= inf || ml[global(r, to)] >= inf)
            continue;
          callees[r].push_back(sym.id);
          if (sym_len(sym) == 0 && !seen[to])
            seen[to] = 1, stack.push_back(to);
        }
      }
    }
    std::vector<std::uint8_t> color(dfas.size(), 0);
    auto dfs = [&](auto& self, std::uint32_t r) -> void {
      color[r] = 1;
      for (auto c : callees[r]) {
        if (color[c] == 1)
          throw compile_error("left-recursive reference (a $ref or rule that reaches itself before any character)");
        if (color[c] == 0)
          self(self, c);
      }
      color[r] = 2;
    };
    for (std::uint32_t r = 0; r < dfas.size(); ++r)
      if (color[r] == 0)
        dfs(dfs, r);
  }
  // 4. edges, lexers and calls.
  std::map<std::vector<std::uint32_t>, std::int32_t> lexer_ids;
  g->lex_off_.assign(n, 0);
  g->lexer_of_.assign(n, -1);
  for (std::uint32_t r = 0; r < dfas.size(); ++r)
    for (std::size_t s = 0; s < dfas[r].final.size(); ++s) {
      const auto gs = global(r, static_cast<std::int32_t>(s));
      std::vector<std::uint32_t> lex;
      std::vector<grammar::rstate> lex_to;
      for (auto [sym, to] : dfas[r].edges[s]) {
        if (sym_len(sym) >= inf || ml[global(r, to)] >= inf)
          continue;
        if (sym.k == symbol::kind::rule)
          g->calls_.emplace_back(sym.id, global(r, to));
        else
          lex.push_back(sym.id), lex_to.push_back(global(r, to));
      }
      g->call_off_.push_back(static_cast<std::uint32_t>(g->calls_.size()));
      g->lex_off_[gs] = static_cast<std::uint32_t>(g->lex_targets_.size());
      g->lex_targets_.insert(g->lex_targets_.end(), lex_to.begin(), lex_to.end());
      if (lex.empty())
        continue;
      auto [it, fresh] = lexer_ids.emplace(lex, static_cast<std::int32_t>(g->lexers_.size()));
      if (fresh) {
        auto l = std::make_shared<lexer>();
        l->lexemes = lex;
        l->g_ = g.get();
        const auto general = std::count_if(lex.begin(), lex.end(), [&](std::uint32_t id) {
          return shapes_[id] == lexeme_shape::general;
        });
        if (lex.size() > 1 && general > 1) {
          // Two general lexemes may overlap without bound (patterns, strings of several
          // formats): built here, under the compile budget.
          std::vector<const byte_dfa*> parts;
          for (auto id : lex) {
            if (makers_[id]) {  // a lazy part is built now
              lexemes_[id] = makers_[id]();
              makers_[id] = nullptr;
            }
            parts.push_back(&lexemes_[id]);
          }
          l->dfa_ = byte_dfa::unite(parts, *budget_);
          l->built_.store(true, std::memory_order_release);
        }
        g->lexers_.push_back(std::move(l));
      }
      g->lexer_of_[gs] = it->second;
    }
  g->lexemes_ = std::move(lexemes_);
  g->makers_ = std::move(makers_);
  g->lexeme_once_ = std::make_unique<std::once_flag[]>(g->lexemes_.size());
  g->lexeme_built_ = std::make_unique<std::atomic<bool>[]>(g->lexemes_.size());
  return g;
}

} // namespace deepinfer::recipe::so
