#pragma once

#include "recipe/structured/byte_automaton.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace deepinfer::recipe::so {

/// What a rule consumes at one step: a lexeme (a byte DFA) or a call of another rule.
struct symbol {
  enum class kind : std::uint8_t { lexeme, rule };
  kind k = kind::lexeme;
  std::uint32_t id = 0;
  friend bool operator==(symbol a, symbol b) { return a.k == b.k && a.id == b.id; }
  friend bool operator<(symbol a, symbol b) { return a.k != b.k ? a.k < b.k : a.id < b.id; }
};

/// A rule under construction: an NFA over symbols with epsilon edges.
class rule_nfa {
public:
  struct frag {
    std::int32_t start;
    std::int32_t end;
  };
  std::int32_t add();
  void edge(std::int32_t from, symbol s, std::int32_t to);
  void eps(std::int32_t from, std::int32_t to);
  frag sym(symbol s);
  frag seq(std::span<const frag> parts);
  frag alt(std::span<const frag> parts);
  frag opt(frag f);
  frag star(frag f);
  frag empty();

  struct state {
    std::vector<std::pair<symbol, std::int32_t>> edges;
    std::vector<std::int32_t> eps;
  };
  std::vector<state> states;
};

/// How a lexeme may combine in a union: `literal` lexemes (a fixed string, or a few, after
/// optional whitespace: keys, punctuation, enum values) walk one trie together, so a union of
/// literals and at most one other lexeme has about as many states as its parts, never more.
enum class lexeme_shape : std::uint8_t { general, literal };

/// The union of the lexemes a rule state may read next, as one DFA (tag i = lexemes[i]).
///
/// A union whose size is bounded by its parts' (literals plus at most one other lexeme: every
/// object's key positions) is built on first use: an object with N optional properties has N
/// key unions of O(N) states each, and a request visits a few of them, so building them all
/// was most of the compile time of large schemas (Kubernetes, Github_hard: O(N^2) states).
/// Other unions are built at compile time, where a blow-up is a compile error.
class lexer {
public:
  std::vector<std::uint32_t> lexemes;
  /// The union (built on the first call when lazy; thread-safe).
  const byte_dfa& dfa() const;
  /// Whether the union exists yet (bytes() counts only built ones).
  bool built() const noexcept { return built_.load(std::memory_order_acquire); }

private:
  friend class grammar_builder;
  void build() const;
  const class grammar* g_ = nullptr;  // its lexemes
  mutable std::once_flag once_;
  mutable std::atomic<bool> built_{false};
  mutable byte_dfa dfa_;
};

/// A recursive transition network: rules are DFAs over symbols, lexemes DFAs over bytes, and
/// every rule state that reads lexemes has one `lexer` for all of them. Rule states are numbered
/// globally. Built by `grammar_builder`, immutable afterwards.
class grammar {
public:
  using rstate = std::uint32_t;

  rstate root_start() const noexcept { return rule_start_[root_]; }
  rstate rule_start(std::uint32_t r) const noexcept { return rule_start_[r]; }
  std::uint32_t rule_of(rstate s) const noexcept { return rule_of_[s]; }
  bool is_final(rstate s) const noexcept { return final_[s] != 0; }
  /// The lexer read in `s`, or nullptr when `s` reads no lexeme.
  const lexer* lexer_of(rstate s) const noexcept {
    return lexer_of_[s] < 0 ? nullptr : lexers_[lexer_of_[s]].get();
  }
  /// Index of the lexer of `s` (-1: none) among `lexer_count()`.
  std::int32_t lexer_index(rstate s) const noexcept { return lexer_of_[s]; }
  std::size_t lexer_count() const noexcept { return lexers_.size(); }
  const lexer& lexer_at(std::size_t i) const noexcept { return *lexers_[i]; }
  /// Where `s` goes after its lexer accepted tag `t`.
  rstate lex_target(rstate s, std::uint16_t t) const noexcept { return lex_targets_[lex_off_[s] + t]; }
  /// The rules `s` may call, with the state reached when each returns.
  std::span<const std::pair<std::uint32_t, rstate>> calls(rstate s) const noexcept {
    return {calls_.data() + call_off_[s], calls_.data() + call_off_[s + 1]};
  }
  /// Where `caller` goes when rule `r` returns; precondition: `caller` calls `r`.
  rstate after_call(rstate caller, std::uint32_t r) const noexcept;
  /// Bytes of a shortest completion from `s` to the end of its rule.
  std::uint32_t min_len(rstate s) const noexcept { return min_len_[s]; }
  std::size_t states() const noexcept { return rule_of_.size(); }
  std::size_t bytes() const noexcept;
  /// Lexeme `i` (a lazy one is built on the first call; thread-safe).
  const byte_dfa& lexeme(std::uint32_t i) const;
  std::size_t lexeme_count() const noexcept { return lexemes_.size(); }

private:
  friend class grammar_builder;
  std::uint32_t root_ = 0;
  mutable std::vector<byte_dfa> lexemes_;
  // Lazy lexemes: a maker each (empty: built at compile time), built once.
  std::vector<std::function<byte_dfa()>> makers_;
  std::unique_ptr<std::once_flag[]> lexeme_once_;
  std::unique_ptr<std::atomic<bool>[]> lexeme_built_;
  std::vector<rstate> rule_start_;
  std::vector<std::uint32_t> rule_of_;
  std::vector<std::uint8_t> final_;
  std::vector<std::int32_t> lexer_of_;
  std::vector<std::shared_ptr<const lexer>> lexers_;
  std::vector<std::uint32_t> lex_off_;
  std::vector<rstate> lex_targets_;
  std::vector<std::uint32_t> call_off_{0};
  std::vector<std::pair<std::uint32_t, rstate>> calls_;
  std::vector<std::uint32_t> min_len_;
};

/// Builds a `grammar`: add lexemes and rules, then `finish` (determinize, drop what cannot
/// complete, check for left recursion, build the lexers).
class grammar_builder {
public:
  explicit grammar_builder(budget& b) : budget_(&b) {}
  /// A lexeme from its DFA; an empty language is allowed (the symbol is dropped).
  symbol lexeme(byte_dfa d, lexeme_shape shape = lexeme_shape::general);
  symbol lexeme(const rx& r, lexeme_shape shape = lexeme_shape::general) {
    return lexeme(byte_dfa::of(r, *budget_), shape);
  }
  /// A lexeme built on first use by `make` (never empty; its shortest match `dist0` bytes, what
  /// the grammar needs at compile time). `make` must be self-contained and not throw: it runs
  /// while masks are computed.
  symbol lazy_lexeme(std::function<byte_dfa()> make, std::int32_t dist0, lexeme_shape shape = lexeme_shape::general);
  /// A new rule, defined later with `define`.
  symbol declare();
  void define(symbol rule, rule_nfa nfa, rule_nfa::frag f);
  /// Throws `compile_error` when the root cannot complete or a rule is left-recursive.
  std::shared_ptr<const grammar> finish(symbol root);
  budget& bud() { return *budget_; }

private:
  budget* budget_;
  std::vector<byte_dfa> lexemes_;
  std::vector<lexeme_shape> shapes_;
  std::vector<std::function<byte_dfa()>> makers_;
  std::vector<std::int32_t> dist0_;
  struct def {
    rule_nfa nfa;
    rule_nfa::frag f{-1, -1};
  };
  std::vector<def> rules_;
};

} // namespace deepinfer::recipe::so
