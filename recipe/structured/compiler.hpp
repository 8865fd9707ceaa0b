#pragma once

#include "recipe/base/expected.hpp"
#include "recipe/structured/matcher.hpp"

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace deepinfer::recipe::so {

/// What a request constrains its output to.
enum class constraint_kind : std::uint8_t {
  json_schema,  ///< `text` is a JSON Schema
  json_object,  ///< any JSON object, never a bare scalar or array (`text` ignored)
  regex,        ///< `text` is an ECMA-262 regex the whole output must match
  grammar,      ///< `text` is a Lark-style EBNF grammar (start rule `start`)
  tool_calls,   ///< `text` is {"tools": [{"name", "parameters"}], "parallel", "v41"} (compile_tool_calls)
};

struct constraint {
  constraint() = default;
  constraint(constraint_kind k, std::string t, std::optional<std::uint32_t> ws = std::nullopt)
      : kind(k), text(std::move(t)), json_whitespace(ws) {}
  constraint_kind kind = constraint_kind::json_schema;
  std::string text;
  /// JSON outputs (schema, object, a tool call's arguments): the most whitespace bytes in a row
  /// between two tokens (nullopt: any; 0: compact). Ignored by regex and grammar.
  std::optional<std::uint32_t> json_whitespace;
};

/// Compiles constraints into matchers over one vocabulary and caches them by (constraint hash,
/// vocabulary fingerprint), bounded in bytes (least recently used first out). Thread-safe.
class compiler {
public:
  struct config {
    /// A compile that takes longer fails with "compile timeout".
    std::chrono::microseconds timeout = std::chrono::seconds{2};
    /// Cap on the states of any one automaton.
    std::size_t max_states = 200'000;
    /// Compiled constraints kept (bytes of their automata, taken again at each use: parts are
    /// built on first use).
    std::size_t cache_bytes = 256u << 20;
    /// Per-lexer-state token classes shared by all constraints.
    std::size_t class_cache_bytes = 1024u << 20;
    matcher::config matching{};
  };

  compiler(std::shared_ptr<const vocabulary> v, config cfg);
  explicit compiler(std::shared_ptr<const vocabulary> v) : compiler(std::move(v), config{}) {}

  /// The matcher, or the reason it cannot be built (unsupported keyword, bad regex, timeout...).
  expected<std::shared_ptr<const matcher>, std::string> compile(const constraint& c);

  /// Whether `c` is compiled and cached (a `compile` now would not build it).
  bool cached(const constraint& c) const;

  const vocabulary& vocab() const noexcept { return *vocab_; }
  std::size_t cached_bytes() const;
  /// Bytes of a compiled constraint's automata.
  static std::size_t bytes_of(const matcher& m) { return m.gram().bytes(); }

private:
  /// Drops least recently used entries while over `cache_bytes` (the newest always stays).
  void evict_over_bound();
  std::shared_ptr<const vocabulary> vocab_;
  config cfg_;
  std::shared_ptr<lexer_class_cache> classes_;
  mutable std::mutex mutex_;
  struct entry {
    std::uint64_t key;
    std::shared_ptr<const matcher> m;
    std::size_t bytes;
  };
  std::list<entry> lru_;
  std::unordered_map<std::uint64_t, std::list<entry>::iterator> index_;
  std::size_t bytes_ = 0;
};

} // namespace deepinfer::recipe::so
