#pragma once

#include "recipe/structured/byte_automaton.hpp"
#include "recipe/structured/token_trie.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace deepinfer::recipe::so {

/// What one lexer state allows, whatever surrounds it: the tokens a lexer can read whole from
/// state q (`dense` bits or `sparse` ids), and for each final state the walk passed with bytes
/// left, the tries of those leftover suffixes (to be checked against what follows the lexeme).
struct lexer_view;

struct lexer_class {
  std::vector<std::uint64_t> dense;
  std::vector<token_id> sparse;
  struct group {
    std::int32_t final_state;
    byte_trie suffixes;
  };
  std::vector<group> groups;
  std::size_t bytes = 0;

  /// Walks the vocabulary from `view`'s first state of `d` (the tight loop: one table lookup
  /// per live trie node, a level at a time).
  static std::shared_ptr<const lexer_class> make(const byte_dfa& d, const lexer_view& view, const vocabulary& v);
};

/// The part of a lexer a token can reach from state q: the states within `depth` bytes (the
/// longest token), numbered breadth-first from q (`order[i]` is the lexer state of view state
/// i), and a hash of that numbered automaton. Lexer states whose views are equal allow the same
/// tokens, whichever lexer they are in (a plain string's inside in any union, a long string's
/// counts far from its bounds). The hash reads each row as runs of bytes with one target (a
/// row's bytes mostly fall in a few ranges), so a view costs its runs, not 256 steps a state.
struct lexer_view {
  std::vector<std::int32_t> order;
  /// The first `expanded` states of `order` are closer than `depth` (their rows are read).
  std::size_t expanded = 0;
  /// Bit b: some expanded row changes target between bytes b - 1 and b (the byte ranges between
  /// cuts are the walk's byte classes).
  std::array<std::uint64_t, 4> cuts{};
  std::uint64_t signature = 0;
  lexer_view(const byte_dfa& d, std::int32_t q, std::uint32_t depth);
};

/// Lexer classes shared by every constraint compiled for one vocabulary, keyed by (DFA hash,
/// state); bounded in bytes (cleared when full: entries in use stay alive through their owners).
class lexer_class_cache {
public:
  explicit lexer_class_cache(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  std::shared_ptr<const lexer_class> get(const byte_dfa& d, const lexer_view& view, const vocabulary& v);
  std::size_t bytes() const;

private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::shared_ptr<const lexer_class>> map_;
  std::size_t bytes_ = 0;
  std::size_t max_bytes_;
};

} // namespace deepinfer::recipe::so
