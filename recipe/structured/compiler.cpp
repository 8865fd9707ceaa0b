#include "recipe/structured/compiler.hpp"

#include "recipe/structured/ebnf.hpp"
#include "recipe/structured/json_schema.hpp"
#include "recipe/structured/regex_parser.hpp"
#include "recipe/structured/tool_call.hpp"

namespace deepinfer::recipe::so {

compiler::compiler(std::shared_ptr<const vocabulary> v, config cfg)
  : vocab_(std::move(v)), cfg_(cfg), classes_(std::make_shared<lexer_class_cache>(cfg.class_cache_bytes)) {}

namespace {
std::uint64_t hash_of(const constraint& c, std::uint64_t fp) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ (static_cast<std::uint64_t>(c.kind) + 1);
  for (unsigned char ch : c.text)
    h = (h ^ ch) * 0x100000001b3ull;
  h = (h ^ (c.json_whitespace ? *c.json_whitespace + 1ull : 0ull)) * 0x100000001b3ull;
  return h ^ (fp * 0x9E3779B97F4A7C15ull);
}
} // namespace

expected<std::shared_ptr<const matcher>, std::string> compiler::compile(const constraint& c) {
  const auto key = hash_of(c, vocab_->fingerprint());
  {
    std::lock_guard lock{mutex_};
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      // Parts built on first use (key unions, other-key lexemes) grow an entry while requests
      // use it: its size is taken again at each hit, and the bound applied to that.
      auto& e = *it->second;
      const auto now = bytes_of(*e.m);
      bytes_ += now - e.bytes;
      e.bytes = now;
      auto m = e.m;
      evict_over_bound();
      return m;
    }
  }
  std::shared_ptr<const grammar> g;
  try {
    budget b{cfg_.timeout, cfg_.max_states};
    const json_options spacing{c.json_whitespace};
    switch (c.kind) {
    case constraint_kind::json_schema: {
      nlohmann::ordered_json schema;
      try {
        schema = nlohmann::ordered_json::parse(c.text);
      } catch (const std::exception& e) {
        return std::string{"the schema is not valid JSON: "} + e.what();
      }
      g = compile_json_schema(schema, b, spacing);
      break;
    }
    case constraint_kind::json_object: g = compile_json_object(b, spacing); break;
    case constraint_kind::regex: g = compile_regex(c.text, b); break;
    case constraint_kind::grammar: g = compile_ebnf(c.text, b); break;
    case constraint_kind::tool_calls: {
      nlohmann::ordered_json spec;
      try {
        spec = nlohmann::ordered_json::parse(c.text);
      } catch (const std::exception& e) {
        return std::string{"the tool-call spec is not valid JSON: "} + e.what();
      }
      g = compile_tool_calls(spec, b, spacing);
      break;
    }
    }
  } catch (const compile_error& e) {
    return std::string{e.what()};
  } catch (const std::exception& e) {
    return std::string{"invalid constraint: "} + e.what();
  }
  auto m = std::make_shared<const matcher>(g, vocab_, classes_, cfg_.matching);
  // A language of the empty string alone (`start: b` with `b:` empty, the regex `^$`) allows no
  // token at all, where the rank would still have to pick one.
  if (m->start().dead())
    return std::string{"the constraint admits only an empty output; it must match at least one character"};
  const auto bytes = g->bytes();
  std::lock_guard lock{mutex_};
  lru_.push_front({key, m, bytes});
  index_[key] = lru_.begin();
  bytes_ += bytes;
  evict_over_bound();
  return std::shared_ptr<const matcher>{m};
}

void compiler::evict_over_bound() {
  while (bytes_ > cfg_.cache_bytes && lru_.size() > 1) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

bool compiler::cached(const constraint& c) const {
  const auto key = hash_of(c, vocab_->fingerprint());
  std::lock_guard lock{mutex_};
  return index_.count(key) > 0;
}

std::size_t compiler::cached_bytes() const {
  std::lock_guard lock{mutex_};
  return bytes_;
}

} // namespace deepinfer::recipe::so
