#pragma once

#include "recipe/structured/grammar.hpp"
#include "recipe/structured/lexer_class.hpp"
#include "recipe/structured/token_bits.hpp"
#include "recipe/structured/token_trie.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace deepinfer::recipe::so {

/// Where a constrained output is: every way the bytes so far can be read (a stack of rule
/// states plus the state of the lexer on top). A plain value: copy it to fork, send it with the
/// request (reroute, handoff); `matcher` interprets it. Empty means the output left the language.
class matcher_state {
public:
  struct config {
    std::vector<std::uint32_t> stack;
    std::int32_t q = 0;
    friend bool operator==(const config&, const config&) = default;
    friend auto operator<=>(const config&, const config&) = default;
  };
  bool dead() const noexcept { return configs_.empty(); }
  const std::vector<config>& configs() const noexcept { return configs_; }
  friend bool operator==(const matcher_state&, const matcher_state&) = default;

private:
  friend class matcher;
  std::vector<config> configs_;
};

/// A bitmask over the vocabulary (bit i = token i allowed).
using token_mask = std::vector<std::uint64_t>;

inline bool mask_test(const token_mask& m, token_id t) {
  return (m[static_cast<std::size_t>(t) >> 6] >> (t & 63)) & 1u;
}

/// Token-level matching of one compiled constraint over one vocabulary. Thread-safe (const).
class matcher {
public:
  struct config {
    /// In the last `horizon` tokens before the budget's shortest completion, each candidate is
    /// checked to leave a completion that still fits.
    std::size_t horizon = 16;
  };
  matcher(std::shared_ptr<const grammar> g, std::shared_ptr<const vocabulary> v,
          std::shared_ptr<lexer_class_cache> cache, config cfg);
  matcher(std::shared_ptr<const grammar> g, std::shared_ptr<const vocabulary> v,
          std::shared_ptr<lexer_class_cache> cache)
    : matcher(std::move(g), std::move(v), std::move(cache), config{}) {}

  matcher_state start() const;
  /// Consumes `t` (EOS: allowed only when accepting; it leaves the state as is). False (and `s`
  /// dead) when `t` is not allowed.
  bool advance(matcher_state& s, token_id t) const;
  /// Consumes raw bytes (tests, completion).
  bool advance_bytes(matcher_state& s, std::string_view bytes) const;
  /// Tokens allowed next; EOS among them exactly when `is_accepting(s)`.
  token_mask allowed_tokens(const matcher_state& s) const;
  /// Tokens allowed with `tokens_left` tokens still to come (EOS not counted): when that is at
  /// most the forced completion's length only its first token; near it only tokens whose
  /// completion still fits.
  token_mask allowed_tokens(const matcher_state& s, std::size_t tokens_left) const;
  /// Whether the output so far is a complete value.
  bool is_accepting(const matcher_state& s) const;
  /// The forced completion: the shortest completion in bytes, tokenized greedily (longest
  /// token first); empty when accepting.
  std::vector<token_id> forced_completion(const matcher_state& s) const;
  std::size_t shortest_completion_length(const matcher_state& s) const { return forced_completion(s).size(); }
  /// How many tokens before the budget's forced completion each candidate is checked: the
  /// config's horizon plus what one token can add to the completion in this grammar.
  std::size_t horizon() const noexcept { return horizon_; }
  /// Bytes of a shortest completion.
  std::string shortest_completion_bytes(const matcher_state& s) const;

  const vocabulary& vocab() const noexcept { return *vocab_; }
  const grammar& gram() const noexcept { return *g_; }

private:
  using cfg_t = matcher_state::config;
  void enter(std::vector<std::uint32_t> stack, std::vector<cfg_t>& out, bool& accept,
             std::vector<std::vector<std::uint32_t>>& seen) const;
  void pop_lexeme(const cfg_t& c, std::int32_t qf, std::vector<cfg_t>& out, bool& accept) const;
  void step(const std::vector<cfg_t>& in, std::uint8_t b, std::vector<cfg_t>& out) const;
  void mask_config(const cfg_t& c, token_mask& m, int depth) const;
  void walk(const std::vector<cfg_t>& from, const byte_trie& t, token_mask& m) const;
  struct local_class {
    std::shared_ptr<const lexer_class> cls;
    std::vector<std::int32_t> order;
  };
  const local_class& classify(std::int32_t li, std::int32_t q) const;
  std::uint64_t completion_cost(const cfg_t& c, std::string* out) const;
  using rest_memo = std::map<grammar::rstate, std::optional<std::string>>;
  std::optional<std::string> shortest_rest(grammar::rstate st, rest_memo& memo) const;

  std::shared_ptr<const grammar> g_;
  std::shared_ptr<const vocabulary> vocab_;
  std::shared_ptr<lexer_class_cache> cache_;
  config cfg_;
  /// `cfg_.horizon` plus the most one token can add to the forced completion (see the constructor).
  std::size_t horizon_ = 0;
  // Per lexer and state, the class used last (a lock-free fast path over the shared cache).
  mutable std::mutex local_mutex_;
  mutable std::vector<std::vector<std::unique_ptr<local_class>>> local_;
};

/// One output drawn uniformly among the tokens the budgeted masks allow, in at most `budget`
/// tokens (tests and `deepinfer-so-check --sample`): its tokens, and `fault` when it went wrong,
/// each a bug: "dead" (a mask with nothing in it), "refused" (a token the mask allowed that
/// `advance` refused), "end allowed early" (end of sequence in the mask of a state that does not
/// accept), "unfinished" (not accepting when the budget ran out).
struct drawn_output {
  std::vector<token_id> tokens;
  const char* fault = nullptr;
};
drawn_output draw_output(const matcher& m, std::mt19937& rng, std::size_t budget);

} // namespace deepinfer::recipe::so
