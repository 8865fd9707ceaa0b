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
class subtree_memo;

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
  static std::shared_ptr<const lexer_class> make(const byte_dfa& d, const lexer_view& view, const vocabulary& v,
                                                 subtree_memo* memo = nullptr);
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

/// What the vocabulary below each first byte allows from one lexer state entered after that
/// byte, for views met at depth 1 of more than one walk. Many lexer states allow nearly every
/// token and differ only in their first bytes: the inside of a key in each object's key lexer
/// (the union tracks the declared keys, so every object's views differ), a string's inside in
/// different unions. After one byte that parts them from the literals they are the same plain
/// string state, so each walk of the whole trie (~1 ms) mostly redoes the one before; with the
/// parts below depth 1 kept, a walk is its first level plus the kept tokens. Keyed by the
/// signature of the view from the depth-1 state; bounded in bytes (cleared when full).
class subtree_memo {
public:
  struct entry {
    /// Tokens ending below the first byte b (depth >= 2): tokens[tok_off[b], tok_off[b + 1]).
    std::array<std::uint32_t, 257> tok_off{};
    std::vector<token_id> tokens;
    /// Live final nodes with children below b: (state of the depth-1 view, preorder node).
    std::array<std::uint32_t, 257> end_off{};
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ends;
    /// All of `tokens` as a mask, when they are many.
    std::vector<std::uint64_t> all;
    std::size_t bytes() const noexcept { return sizeof(entry) + tokens.size() * 4 + ends.size() * 8 + all.size() * 8; }
  };
  explicit subtree_memo(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  /// The entry of `sig`, or null; `build` says whether to build one (its second walk).
  std::shared_ptr<const entry> find(std::uint64_t sig, bool& build);
  void put(std::uint64_t sig, std::shared_ptr<const entry> e);
  /// Builds the entry of `view`, a view of `d` from a depth-1 state (its depth: the longest token - 1).
  static std::shared_ptr<const entry> make(const byte_dfa& d, const lexer_view& view, const vocabulary& v);

private:
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::shared_ptr<const entry>> map_;
  std::unordered_map<std::uint64_t, std::uint32_t> seen_;
  std::size_t bytes_ = 0;
  std::size_t max_bytes_;
};

/// Lexer classes shared by every constraint compiled for one vocabulary, keyed by (DFA hash,
/// state); bounded in bytes (cleared when full: entries in use stay alive through their owners).
class lexer_class_cache {
public:
  /// `max_bytes` for both: a quarter for the subtree memo, the rest for the classes.
  explicit lexer_class_cache(std::size_t max_bytes) : max_bytes_(max_bytes - max_bytes / 4), memo_(max_bytes / 4) {}
  std::shared_ptr<const lexer_class> get(const byte_dfa& d, const lexer_view& view, const vocabulary& v);
  std::size_t bytes() const;

private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::shared_ptr<const lexer_class>> map_;
  std::size_t bytes_ = 0;
  std::size_t max_bytes_;
  subtree_memo memo_;
};

} // namespace deepinfer::recipe::so
