#include "recipe/protocol/parse_request.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace deepinfer::recipe;

namespace {

auto parse(const std::string& body) { return parse_request(api_kind::completions, body, {}); }

/// The `param` of the 400 a body gets (empty when it parses).
std::string param_of(const std::string& body) {
  auto r = parse(body);
  return r ? "" : nlohmann::json::parse(r.error().body())["error"]["param"].get<std::string>();
}

} // namespace

BOOST_AUTO_TEST_SUITE(completions_requests)

BOOST_AUTO_TEST_CASE(a_prompt_is_text_or_token_ids_alone_or_in_a_one_element_list) {
  auto text = parse(R"({"model": "m", "prompt": "Once upon"})");
  BOOST_REQUIRE(text.has_value());
  BOOST_TEST((text->api == api_kind::completions));
  BOOST_TEST(!text->prompt->is_ids);
  BOOST_TEST(text->prompt->text == "Once upon");
  BOOST_TEST(text->messages.empty());
  BOOST_TEST(*text->sampling.max_tokens == 16); // OpenAI's default for this endpoint
  BOOST_TEST(parse(R"({"model": "m", "prompt": ["Once"]})")->prompt->text == "Once");
  auto ids = parse(R"({"model": "m", "prompt": [5, 6, 7]})");
  BOOST_TEST(ids->prompt->is_ids);
  BOOST_TEST(ids->prompt->ids == (std::vector<std::int32_t>{5, 6, 7}));
  BOOST_TEST(parse(R"({"model": "m", "prompt": [[9, 8]]})")->prompt->ids == (std::vector<std::int32_t>{9, 8}));
}

BOOST_AUTO_TEST_CASE(logprobs_is_a_count_and_sampling_is_chats) {
  auto c = parse(R"({"model": "m", "prompt": "x", "logprobs": 3, "max_tokens": 5, "temperature": 0.5, "stop": "\n",
                    "seed": 4, "presence_penalty": 1, "logit_bias": {"12": -100}, "stream": true,
                    "stream_options": {"include_usage": true}, "suffix": null, "echo": false, "n": 1})");
  BOOST_REQUIRE(c.has_value());
  BOOST_TEST(c->sampling.logprobs);
  BOOST_TEST(c->sampling.top_logprobs == 3);
  BOOST_TEST(*c->sampling.max_tokens == 5);
  BOOST_TEST(c->sampling.stop == std::vector<std::string>{"\n"});
  BOOST_TEST(*c->sampling.seed == 4);
  BOOST_TEST(c->sampling.logit_bias.size() == 1u);
  BOOST_TEST(c->stream_include_usage);
  BOOST_TEST(!parse(R"({"model": "m", "prompt": "x", "logprobs": null})")->sampling.logprobs);
  BOOST_TEST(parse(R"({"model": "m", "prompt": "x", "logprobs": 0})")->sampling.logprobs);
  BOOST_TEST(parse(R"({"model": "m", "prompt": "x", "n": 3, "best_of": 3})")->sampling.n == 3);
  BOOST_TEST(c->sampling.prompt_logprobs == -1);
  BOOST_TEST(!c->prompt->echo);
}

BOOST_AUTO_TEST_CASE(echo_returns_the_prompt_and_with_logprobs_scores_it) {
  auto plain = parse(R"({"model": "m", "prompt": "x", "echo": true})");
  BOOST_REQUIRE(plain.has_value());
  BOOST_TEST(plain->prompt->echo);
  BOOST_TEST(plain->sampling.prompt_logprobs == -1); // the text only
  // What evaluation harnesses send for a prompt's likelihood (lm-evaluation-harness).
  auto scored = parse(R"({"model": "m", "prompt": [1, 2, 3], "echo": true, "logprobs": 1, "max_tokens": 1,
                          "temperature": 0})");
  BOOST_REQUIRE(scored.has_value());
  BOOST_TEST(scored->prompt->echo);
  BOOST_TEST(scored->sampling.prompt_logprobs == 1);
  BOOST_TEST(parse(R"({"model": "m", "prompt": "x", "echo": true, "logprobs": 0})")->sampling.prompt_logprobs == 0);
}

BOOST_AUTO_TEST_CASE(a_suffix_asks_for_the_middle) {
  auto c = parse(R"({"model": "m", "prompt": "def f(x):\n    ", "suffix": "\n    return y"})");
  BOOST_REQUIRE(c.has_value());
  BOOST_TEST(c->prompt->text == "def f(x):\n    ");
  BOOST_TEST(*c->prompt->suffix == "\n    return y");
  BOOST_TEST(!parse(R"({"model": "m", "prompt": "x", "suffix": null})")->prompt->suffix);
}

BOOST_AUTO_TEST_CASE(what_cannot_be_honoured_is_refused_naming_the_field) {
  BOOST_TEST(param_of(R"({"model": "m"})") == "prompt");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": ["a", "b"]})") == "prompt");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": [[1], [2]]})") == "prompt");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": []})") == "prompt");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": [1, "a"]})") == "prompt");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": [-1]})") == "prompt");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": {"a": 1}})") == "prompt");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": "x", "echo": 1})") == "echo");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": [1, 2], "suffix": "end"})") == "suffix"); // FIM needs text
  BOOST_TEST(param_of(R"({"model": "m", "prompt": "x", "suffix": "end", "echo": true})") == "suffix");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": "x", "suffix": 3})") == "suffix");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": "x", "n": 17})") == "n");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": "x", "n": 0})") == "n");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": "x", "best_of": 3})") == "best_of");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": "x", "logprobs": 21})") == "logprobs");
  BOOST_TEST(param_of(R"({"model": "m", "prompt": "x", "stream_options": {"include_usage": true}})") == "stream_options");
}

BOOST_AUTO_TEST_SUITE_END()
