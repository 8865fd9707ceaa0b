#pragma once

#include "recipe/structured/byte_automaton.hpp"
#include "recipe/structured/token_trie.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace deepinfer::recipe::so {

/// What one lexer state allows, whatever surrounds it: the tokens a lexer can read whole from
/// state q (`dense` bits or `sparse` ids), and for each final state the walk passed with bytes
/// left, the tries of those leftover suffixes (to be checked against what follows the lexeme).
struct lexer_class {
  std::vector<std::uint64_t> dense;
  std::vector<token_id> sparse;
  struct group {
    std::int32_t final_state;
    byte_trie suffixes;
  };
  std::vector<group> groups;
  std::size_t bytes = 0;

  /// Walks the vocabulary from `q` (the tight loop: one table lookup per trie node).
  static std::shared_ptr<const lexer_class> make(const byte_dfa& dfa, std::int32_t q, const vocabulary& v);
};

/// Lexer classes shared by every constraint compiled for one vocabulary, keyed by (DFA hash,
/// state); bounded in bytes (cleared when full: entries in use stay alive through their owners).
class lexer_class_cache {
public:
  explicit lexer_class_cache(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  std::shared_ptr<const lexer_class> get(const byte_dfa& dfa, std::int32_t q, const vocabulary& v);
  std::size_t bytes() const;

private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::shared_ptr<const lexer_class>> map_;
  std::size_t bytes_ = 0;
  std::size_t max_bytes_;
};

} // namespace deepinfer::recipe::so
