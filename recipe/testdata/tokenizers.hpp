#pragma once

// The real tokenizers of both template versions, loaded once per test binary.

#include "recipe/render/special_table.hpp"
#include "recipe/testdata/paths.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <boost/test/unit_test.hpp>

namespace deepinfer::recipe::test {

inline const tokenizer& real_tokenizer(template_version v) {
  static auto t32 = tokenizer::load(tokenizer_path("dsv32"));
  static auto t41 = tokenizer::load(tokenizer_path("dsv41"));
  auto& t = v == template_version::dsv32 ? t32 : t41;
  BOOST_REQUIRE_MESSAGE(t, "tokenizer assets missing (run scripts/bootstrap.sh): " << t.error);
  return *t.value;
}

/// The special table of `v`, ids looked up in the real tokenizer.
inline const special_table& real_table(template_version v) {
  auto make = [](template_version ver) { return special_table::from_tokenizer(ver, real_tokenizer(ver)); };
  static auto t32 = make(template_version::dsv32);
  static auto t41 = make(template_version::dsv41);
  auto& t = v == template_version::dsv32 ? t32 : t41;
  BOOST_REQUIRE(t.has_value());
  return *t;
}

} // namespace deepinfer::recipe::test
