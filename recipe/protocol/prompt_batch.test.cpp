#include "recipe/protocol/prompt_batch.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using deepinfer::recipe::split_prompt_batch;

BOOST_AUTO_TEST_SUITE(prompt_batch_suite)

BOOST_AUTO_TEST_CASE(a_list_of_prompts_becomes_one_body_per_prompt_with_the_other_fields_kept) {
  auto b = split_prompt_batch(R"({"model": "m", "prompt": ["a", [1, 2], "c"], "n": 2, "max_tokens": 3})", 64);
  BOOST_TEST(!b.error);
  BOOST_TEST(b.n == 2);
  BOOST_TEST_REQUIRE(b.bodies.size() == 3u);
  auto j = nlohmann::json::parse(b.bodies[1]);
  BOOST_TEST((j["prompt"] == nlohmann::json::array({1, 2})));
  BOOST_TEST(j["model"] == "m");
  BOOST_TEST(j["max_tokens"] == 3);
  BOOST_TEST(nlohmann::json::parse(b.bodies[2])["prompt"] == "c");
}

BOOST_AUTO_TEST_CASE(one_prompt_a_token_list_or_a_bad_body_is_not_a_batch) {
  for (const char* body : {R"({"prompt": "a"})", R"({"prompt": ["a"]})", R"({"prompt": [1, 2, 3]})",
                           R"({"prompt": [[1, 2]]})", R"({"prompt": [}")", R"([1, 2])", R"({"prompt": []})"}) {
    auto b = split_prompt_batch(body, 64);
    BOOST_TEST(b.bodies.empty(), body);
    BOOST_TEST(!b.error, body);
  }
}

BOOST_AUTO_TEST_CASE(more_prompts_than_the_limit_is_a_400_naming_prompt) {
  auto b = split_prompt_batch(R"({"prompt": ["a", "b", "c"]})", 2);
  BOOST_REQUIRE(b.error);
  BOOST_TEST(b.error->status == 400);
  BOOST_TEST(b.error->param == "prompt");
  BOOST_TEST(b.bodies.empty());
}

BOOST_AUTO_TEST_SUITE_END()
