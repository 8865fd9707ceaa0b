// The structured-output compiler actor (issue 19): a constraint compiles into the cache the
// node's ranks mask with, a second ask is a cache hit, one it cannot enforce is an so_refused
// value; the real compiler over the V4.1 vocabulary.
#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/errors.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/node/structured_output.hpp"
#include "actors/so/so_compiler.hpp"
#include "actors/testing/test_system_config.hpp"
#include "recipe/tokenizer/test_assets.hpp"

using namespace deepinfer;
using namespace deepinfer::actors;

namespace {

using system_config = testing::test_system_config;

} // namespace

BOOST_AUTO_TEST_SUITE(so_compiler)

BOOST_AUTO_TEST_CASE(compiles_into_the_ranks_cache_hits_it_again_and_refuses_as_a_value) {
  system_config cfg;
  caf::actor_system sys{cfg};
  auto so = std::make_shared<structured_output>(recipe::test::asset("tokenizer_v41.json").string());
  auto metrics = std::make_shared<http::metrics_registry>();
  auto compiler = spawn_so_compiler(sys, so, metrics);
  recipe::so::constraint c{recipe::so::constraint_kind::json_schema,
                           R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})"};
  const auto spec = structured_output::spec_of(c);
  BOOST_TEST(!so->ready(spec));
  caf::scoped_actor self{sys};
  auto ask = [&](const std::string& s) {
    so_compiled out;
    self->request(compiler, std::chrono::seconds{60}, compile_atom::value, s)
      .receive([&](so_compiled& r) { out = std::move(r); },
               [&](caf::error& e) { BOOST_FAIL("no answer: " + sys.render(e)); });
    return out;
  };
  auto first = ask(spec);
  BOOST_TEST(!first.error, sys.render(first.error));
  BOOST_TEST(first.bytes > 0u);
  BOOST_TEST(first.compile_us > 0);
  BOOST_TEST(so->ready(spec)); // what a rank checks before its request enters the engine
  auto again = ask(spec);
  BOOST_TEST(!again.error);
  BOOST_TEST(again.compile_us == 0);
  BOOST_TEST(again.bytes == first.bytes);
  // {"n": 0} at the shortest, a few tokens; the same again.
  BOOST_TEST(first.shortest_tokens > 0);
  BOOST_TEST(again.shortest_tokens == first.shortest_tokens);
  auto refused = ask(structured_output::spec_of({recipe::so::constraint_kind::json_schema, R"({"type":"array","not":{"uniqueItems":true}})"}));
  BOOST_TEST(is(refused.error, errc::so_refused));
  BOOST_TEST(error_text(refused.error).find("not") != std::string::npos, error_text(refused.error));
  const auto text = metrics->render();
  BOOST_TEST(text.find("deepinfer_so_compiles_total{result=\"compiled\"} 1") != std::string::npos, text);
  BOOST_TEST(text.find("deepinfer_so_compiles_total{result=\"cached\"} 1") != std::string::npos);
  BOOST_TEST(text.find("deepinfer_so_compiles_total{result=\"refused\"} 1") != std::string::npos);
  caf::anon_send_exit(compiler, caf::exit_reason::user_shutdown);
}

// A constraint travels to the ranks as a spec: its kind, text and JSON whitespace bound arrive
// as they left (the bound is part of what the rank compiles), with or without the `@ID:` start.
BOOST_AUTO_TEST_CASE(a_spec_carries_the_whitespace_bound) {
  using recipe::so::constraint_kind;
  for (auto ws : {std::optional<std::uint32_t>{}, std::optional<std::uint32_t>{0}, std::optional<std::uint32_t>{20}})
    for (auto after : {std::optional<int32_t>{}, std::optional<int32_t>{128799}}) {
      const recipe::so::constraint c{constraint_kind::json_schema, R"({"type":"string"})", ws};
      auto back = structured_output::constraint_of(structured_output::spec_of(c, after));
      BOOST_TEST_REQUIRE(back.has_value());
      BOOST_TEST((back->kind == c.kind));
      BOOST_TEST(back->text == c.text);
      BOOST_TEST((back->json_whitespace == ws));
    }
  for (const auto* bad : {"w", "w;o", "wx;o", "w3o", "w3;"})
    BOOST_TEST(!structured_output::constraint_of(bad).has_value(), bad);
}

BOOST_AUTO_TEST_SUITE_END()
