#pragma once

// Test-only helpers for the structured-output suites (no .cpp: never part of the library).

#include "recipe/structured/compiler.hpp"
#include "recipe/tokenizer/test_assets.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <random>
#include <string>

namespace deepinfer::recipe::so::test {

/// One compiler over the real DeepSeek V4.1 vocabulary, shared by the tests of the process.
inline compiler& shared_compiler() {
  static compiler c{vocabulary::of(*recipe::test::shared("tokenizer_v41.json"))};
  return c;
}

inline const tokenizer& shared_tokenizer() { return *recipe::test::shared("tokenizer_v41.json"); }

/// The matcher of `schema` (JSON text, whitespace between tokens bounded by `json_whitespace`); throws with the compile error.
inline std::shared_ptr<const matcher> schema_matcher(const std::string& schema,
                                                     std::optional<std::uint32_t> json_whitespace = std::nullopt) {
  auto m = shared_compiler().compile({constraint_kind::json_schema, schema, json_whitespace});
  if (!m)
    throw std::runtime_error(m.error());
  return *m;
}

/// Whether `text`, tokenized as the model would emit it, passes every mask and ends accepting.
inline bool accepts(const matcher& m, const std::string& text) {
  auto st = m.start();
  for (auto id : shared_tokenizer().encode(text)) {
    if (!mask_test(m.allowed_tokens(st), id))
      return false;
    if (!m.advance(st, id))
      throw std::runtime_error("mask allowed a token advance refused");
  }
  return mask_test(m.allowed_tokens(st), m.vocab().eos()) && m.is_accepting(st);
}

/// One output drawn at random among what the masks allow, within `budget` tokens (the
/// matcher forces a completion in time): its text, or nullopt when it did not end accepting.
inline std::optional<std::string> random_output(const matcher& m, std::mt19937& rng, std::size_t budget) {
  auto st = m.start();
  std::vector<token_id> out;
  for (std::size_t left = budget; left > 0; --left) {
    const auto mask = m.allowed_tokens(st, left);
    std::vector<token_id> ids;
    for (std::size_t w = 0; w < mask.size(); ++w)
      for (auto b = mask[w]; b != 0; b &= b - 1)
        ids.push_back(static_cast<token_id>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(b))));
    if (ids.empty())
      return std::nullopt;
    const auto t = ids[std::uniform_int_distribution<std::size_t>{0, ids.size() - 1}(rng)];
    if (t == m.vocab().eos())
      break;
    if (!m.advance(st, t))
      return std::nullopt;
    out.push_back(t);
  }
  if (!m.is_accepting(st))
    return std::nullopt;
  return shared_tokenizer().decode(out);
}

} // namespace deepinfer::recipe::so::test
