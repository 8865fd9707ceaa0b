#pragma once

#include "recipe/structured/compile_error.hpp"
#include "recipe/structured/regex_ast.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace deepinfer::recipe::so {

/// A nondeterministic automaton over bytes with tagged final states (Thompson construction).
class byte_nfa {
public:
  struct edge {
    std::uint8_t lo;
    std::uint8_t hi;
    std::int32_t to;
  };
  struct state {
    std::vector<edge> edges;
    std::vector<std::int32_t> eps;
    std::int32_t tag = -1;  // >= 0: final, accepting lexeme `tag`
  };
  /// A piece under construction: enter at `start`, leave from `end`.
  struct frag {
    std::int32_t start;
    std::int32_t end;
  };

  std::int32_t add();
  /// Adds `r`, lowered to bytes, as a fragment.
  frag build(const rx& r, budget& b);
  const std::vector<state>& states() const noexcept { return states_; }
  std::vector<state>& states() noexcept { return states_; }

private:
  frag build_set(const rx& r);
  void utf8_range(std::uint32_t lo, std::uint32_t hi, std::int32_t from, std::int32_t to);
  void bytes_path(const std::vector<std::pair<std::uint8_t, std::uint8_t>>& seq, std::int32_t from,
                  std::int32_t to);
  std::vector<state> states_;
};

/// A deterministic automaton over bytes, state 0 the start, every state able to reach a final
/// state (dead transitions are -1). Each final state lists the tags (lexemes) it accepts.
class byte_dfa {
public:
  std::int32_t size() const noexcept { return static_cast<std::int32_t>(accept_off_.size()) - 1; }
  std::int32_t step(std::int32_t q, std::uint8_t b) const noexcept { return next_[q * 256 + b]; }
  const std::int32_t* row(std::int32_t q) const noexcept { return next_.data() + q * 256; }
  bool is_final(std::int32_t q) const noexcept { return accept_off_[q + 1] > accept_off_[q]; }
  std::span<const std::uint16_t> accepts(std::int32_t q) const noexcept {
    return {accept_.data() + accept_off_[q], accept_.data() + accept_off_[q + 1]};
  }
  /// Whether the language is empty (then the DFA has no states).
  bool empty() const noexcept { return size() == 0; }
  /// Bytes on a shortest path from q to a final state.
  std::int32_t dist(std::int32_t q) const noexcept { return dist_[q]; }
  /// A shortest byte string from q to a final state.
  std::string shortest_from(std::int32_t q) const;
  std::size_t bytes() const noexcept { return next_.size() * 4 + accept_.size() * 2 + 64; }

  /// Subset construction from `start`; states that cannot reach a final state are removed.
  static byte_dfa determinize(const byte_nfa& nfa, std::int32_t start, budget& b);
  /// From a transition table (n x 256, -1 dead) and final flags (tag 0); state 0 the start.
  static byte_dfa from_table(std::vector<std::int32_t> next, const std::vector<std::uint8_t>& final);
  /// `prefix`-free unit repeated min..max times (max: rx::unbounded), between `open` and `close`
  /// bytes, after `ws*`: built directly (a unit DFA whose finals have no exits, copied per count).
  static byte_dfa counted(const byte_dfa& unit, std::uint8_t open, std::uint8_t close, std::uint32_t min,
                          std::uint32_t max, budget& b);
  /// The DFA of `r` (tag 0).
  static byte_dfa of(const rx& r, budget& b);
  /// Strings accepted by both (tags of `a`).
  static byte_dfa intersect(const byte_dfa& a, const byte_dfa& b, budget& bud);
  /// Strings of `a` that `b` does not accept (tags of `a`).
  static byte_dfa minus(const byte_dfa& a, const byte_dfa& b, budget& bud);
  /// The union of `parts`, a final state accepting tag i for parts[i] (whatever its own tags).
  static byte_dfa unite(const std::vector<const byte_dfa*>& parts, budget& b);

private:
  void finish();
  template <class Pair, class Final>
  static byte_dfa product(const byte_dfa& a, const byte_dfa& b, budget& bud, Final fin);
  std::vector<std::int32_t> next_;
  std::vector<std::uint32_t> accept_off_{0};
  std::vector<std::uint16_t> accept_;
  std::vector<std::int32_t> dist_;
};

} // namespace deepinfer::recipe::so
