#pragma once

#include "recipe/structured/compile_error.hpp"
#include "recipe/structured/regex_ast.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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
///
/// Rows are stored per byte class, not per byte: bytes that no state tells apart share a class
/// (a JSON string's lexer has ~15, a key literal's a few), so a state costs a few words instead
/// of a 1 KiB row. That is what made long counted strings (10^4..10^5 states) and unions of many
/// keys slow to build and hundreds of MiB to keep. Classes are numbered in the order of their
/// smallest byte, so walking classes in order visits targets in the order bytes would.
class byte_dfa {
public:
  std::int32_t size() const noexcept { return static_cast<std::int32_t>(accept_off_.size()) - 1; }
  std::int32_t step(std::int32_t q, std::uint8_t b) const noexcept { return next_[q * nc_ + cls_[b]]; }
  /// Byte classes: how many, which class a byte is in, the smallest byte of a class.
  std::uint32_t classes() const noexcept { return nc_; }
  std::uint8_t class_of(std::uint8_t b) const noexcept { return cls_[b]; }
  std::uint8_t class_byte(std::uint32_t c) const noexcept { return rep_[c]; }
  std::int32_t step_class(std::int32_t q, std::uint32_t c) const noexcept { return next_[q * nc_ + c]; }
  /// Maximal byte ranges of one class, as the first byte of each (a range ends where the next
  /// begins, the last at 256).
  std::span<const std::uint8_t> runs() const noexcept { return runs_; }
  bool is_final(std::int32_t q) const noexcept { return accept_off_[q + 1] > accept_off_[q]; }
  std::span<const std::uint16_t> accepts(std::int32_t q) const noexcept {
    return {accept_.data() + accept_off_[q], accept_.data() + accept_off_[q + 1]};
  }
  /// Whether the language is empty (then the DFA has no states).
  bool empty() const noexcept { return size() == 0; }
  /// Whether the automaton accepts `bytes` whole (from state 0).
  bool matches(std::string_view bytes) const noexcept {
    if (empty())
      return false;
    std::int32_t q = 0;
    for (unsigned char c : bytes)
      if ((q = step(q, c)) < 0)
        return false;
    return is_final(q);
  }
  /// Bytes on a shortest path from q to a final state.
  std::int32_t dist(std::int32_t q) const noexcept { return dist_[q]; }
  /// A shortest byte string from q to a final state (the smallest bytes among the shortest).
  std::string shortest_from(std::int32_t q) const;
  std::size_t bytes() const noexcept {
    return next_.size() * 4 + accept_.size() * 2 + accept_off_.size() * 4 + dist_.size() * 4 + runs_.size() + 512 + 64;
  }

  /// Subset construction from `start`; states that cannot reach a final state are removed.
  static byte_dfa determinize(const byte_nfa& nfa, std::int32_t start, budget& b);
  /// `prefix`-free unit repeated min..max times (max: rx::unbounded), between `open` and `close`
  /// bytes, after at most `max_ws` bytes of whitespace: built directly (a unit DFA whose finals
  /// have no exits, copied per count).
  static byte_dfa counted(const byte_dfa& unit, std::uint8_t open, std::uint8_t close, std::uint32_t min,
                          std::uint32_t max, budget& b, std::uint32_t max_ws = rx::unbounded);
  /// The DFA of `r` (tag 0).
  static byte_dfa of(const rx& r, budget& b);
  /// `ws* pieces[0] ws* pieces[1] ... ws* pieces[n-1]` (JSON whitespace, at most `max_ws` bytes
  /// in each gap; tag 0), built directly: keys and punctuation, a few of them per schema
  /// property, went through the regex path. nullopt when a piece is empty or starts with
  /// whitespace (use `of`).
  static std::optional<byte_dfa> spaced_literal(std::span<const std::string> pieces,
                                                std::uint32_t max_ws = rx::unbounded);
  /// Strings accepted by both (tags of `a`).
  static byte_dfa intersect(const byte_dfa& a, const byte_dfa& b, budget& bud);
  /// Strings of `a` that `b` does not accept (tags of `a`).
  static byte_dfa minus(const byte_dfa& a, const byte_dfa& b, budget& bud);
  /// The union of `parts`, a final state accepting tag i for parts[i] (whatever its own tags):
  /// a product of the parts (a state is the tuple of their states).
  static byte_dfa unite(const std::vector<const byte_dfa*>& parts, budget& b);

private:
  struct alphabet;
  void set_classes(const std::array<std::uint8_t, 256>& cls, std::uint32_t nc);
  /// Drops dead and unreachable states, numbers states breadth-first, computes distances; with
  /// `merge_classes`, merges byte classes no state tells apart.
  void finish(bool merge_classes = true);
  void merge_equal_classes();
  template <class Pair, class Final>
  static byte_dfa product(const byte_dfa& a, const byte_dfa& b, budget& bud, Final fin);
  std::array<std::uint8_t, 256> cls_{};
  std::array<std::uint8_t, 256> rep_{};
  std::uint32_t nc_ = 1;
  std::vector<std::uint8_t> runs_{0};
  std::vector<std::int32_t> next_;
  std::vector<std::uint32_t> accept_off_{0};
  std::vector<std::uint16_t> accept_;
  std::vector<std::int32_t> dist_;
};

} // namespace deepinfer::recipe::so
