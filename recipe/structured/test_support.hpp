#pragma once

// Test-only helpers for the structured-output suites (no .cpp: never part of the library).

#include "recipe/structured/compiler.hpp"
#include "recipe/structured/json_validate.hpp"
#include "recipe/tokenizer/test_assets.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <random>
#include <string>
#include <vector>

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

/// One output drawn at random among what the budgeted masks allow (`draw_output`): its text, or
/// nullopt when it went wrong.
inline std::optional<std::string> random_output(const matcher& m, std::mt19937& rng, std::size_t budget) {
  auto d = draw_output(m, rng, budget);
  if (d.fault != nullptr)
    return std::nullopt;
  return shared_tokenizer().decode(d.tokens);
}

/// The compiled schema accepts exactly the instances the validator finds valid.
inline void agrees_with_validator(const std::string& schema, const std::vector<const char*>& instances) {
  auto m = schema_matcher(schema);
  auto root = nlohmann::ordered_json::parse(schema);
  auto b = budget::unbounded();
  json_validator check{root, b};
  for (const auto* text : instances)
    BOOST_TEST(accepts(*m, text) == check.valid(nlohmann::ordered_json::parse(text), root), schema << " " << text);
}

} // namespace deepinfer::recipe::so::test
