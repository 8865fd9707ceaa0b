// The legacy Completions encoder: text chunks with legacy logprobs, and `echo`.
#include "recipe/stream/completions_encoder.hpp"
#include "recipe/stream/test_support.hpp"

#include <limits>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace deepinfer::recipe;
using deepinfer::recipe::testing::payloads;

BOOST_AUTO_TEST_SUITE(completions_encoder_suite)

// Legacy completions: a chunk per piece of text with its tokens' entries in the legacy shape
// (text_offset counting characters), a finish chunk, usage, [DONE]; the body holds them all.
BOOST_AUTO_TEST_CASE(completions_chunks_carry_text_and_legacy_logprobs) {
  const token_logprob a{"Hi", -0.5f, {{"Hi", -0.5f}, {"Ho", -1.5f}}}, held{" \xC3", -0.25f, {}}, rest{"\xA9!", -0.75f, {}};
  std::vector<stream_event> one(1), two(1), fin(1);
  one[0].type = stream_event::kind::content;
  one[0].text = "Hi";
  two[0].type = stream_event::kind::content;
  two[0].text = " \xC3\xA9!";
  fin[0].type = stream_event::kind::finish;
  fin[0].reason = finish_reason::length;
  const usage_counts usage{5, 1, 3, 0};
  completions_encoder enc(completions_encoder::config{{"cmpl-1", "m", 7, true}});
  std::string sse = enc.start();
  enc.logprobs(std::span(&a, 1));
  sse += enc.encode(one, usage);
  enc.logprobs(std::span(&held, 1));
  sse += enc.encode({}, usage);
  enc.logprobs(std::span(&rest, 1));
  sse += enc.encode(two, usage);
  sse += enc.encode(fin, usage);
  BOOST_TEST(sse.substr(sse.size() - 14) == "data: [DONE]\n\n");
  const auto p = payloads(sse);
  BOOST_REQUIRE_EQUAL(p.size(), 4u); // two texts, finish, usage
  BOOST_TEST(p[0]["object"] == "text_completion");
  BOOST_TEST(p[0]["choices"][0]["text"] == "Hi");
  BOOST_TEST(p[0]["choices"][0]["logprobs"] == nlohmann::json::parse(R"({"tokens":["Hi"],"token_logprobs":[-0.5],
    "top_logprobs":[{"Hi":-0.5,"Ho":-1.5}],"text_offset":[0]})"));
  BOOST_TEST(p[1]["choices"][0]["logprobs"]["text_offset"] == nlohmann::json::parse("[2,4]")); // " \xC3" is 2 chars
  BOOST_TEST(p[1]["choices"][0]["logprobs"]["token_logprobs"] == nlohmann::json::parse("[-0.25,-0.75]"));
  BOOST_TEST(p[2]["choices"][0]["finish_reason"] == "length");
  BOOST_TEST(p[2]["choices"][0]["text"] == "");
  BOOST_TEST(p[3]["choices"].empty());
  BOOST_TEST(p[3]["usage"]["total_tokens"] == 8);
  const auto body = nlohmann::json::parse(enc.body(usage));
  BOOST_TEST(body["choices"][0]["text"] == "Hi \xC3\xA9!");
  BOOST_TEST(body["choices"][0]["logprobs"]["tokens"].size() == 3u);
  BOOST_TEST(body["choices"][0]["logprobs"]["text_offset"] == nlohmann::json::parse("[0,2,4]"));
  BOOST_TEST(body["choices"][0]["finish_reason"] == "length");
  completions_encoder plain(completions_encoder::config{{"cmpl-2", "m", 7, false}});
  plain.apply(one);
  plain.apply(fin);
  const auto pb = nlohmann::json::parse(plain.body(usage));
  BOOST_TEST(pb["choices"][0]["logprobs"].is_null());
  BOOST_TEST(pb["choices"][0]["text"] == "Hi");
  const auto err = payloads(plain.fail("server_error", "deadline_exceeded", "late"));
  BOOST_TEST(err.at(0)["error"]["code"] == "deadline_exceeded");
}

// `echo`: the prompt first (its first token's logprob and alternatives null), the completion's
// offsets going on from the prompt's; streamed, the prompt is a chunk of its own.
BOOST_AUTO_TEST_CASE(completions_echo_puts_the_prompt_and_its_scores_first) {
  const float none = std::numeric_limits<float>::quiet_NaN();
  const std::vector<token_logprob> prompt{{"The", none, {}}, {" cat", -2.5f, {{" dog", -1.0f}}}};
  const token_logprob gen{" sat", -0.5f, {{" sat", -0.5f}}};
  std::vector<stream_event> out(2);
  out[0].type = stream_event::kind::content;
  out[0].text = " sat";
  out[1].type = stream_event::kind::finish;
  out[1].reason = finish_reason::length;
  for (bool stream : {true, false}) {
    BOOST_TEST_CONTEXT("stream " << stream) {
      completions_encoder enc(completions_encoder::config{{"cmpl-1", "m", 7, false}});
      const auto first = enc.echo("The cat", prompt, true);
      enc.logprobs(std::span(&gen, 1));
      std::string sse = first;
      if (stream)
        sse += enc.encode(out, {});
      else
        enc.apply(out);
      const auto body = nlohmann::json::parse(enc.body({}));
      const auto& lp = body["choices"][0]["logprobs"];
      BOOST_TEST(body["choices"][0]["text"] == "The cat sat");
      BOOST_TEST(lp["tokens"] == nlohmann::json::parse(R"(["The", " cat", " sat"])"));
      BOOST_TEST(lp["token_logprobs"] == nlohmann::json::parse("[null, -2.5, -0.5]"));
      BOOST_TEST(lp["top_logprobs"] == nlohmann::json::parse(R"([null, {" dog": -1.0}, {" sat": -0.5}])"));
      BOOST_TEST(lp["text_offset"] == nlohmann::json::parse("[0, 3, 7]"));
      const auto p = payloads(sse);
      BOOST_REQUIRE(p.size() >= (stream ? 2u : 1u));
      BOOST_TEST(p[0]["choices"][0]["text"] == "The cat");
      BOOST_TEST(p[0]["choices"][0]["logprobs"]["token_logprobs"] == nlohmann::json::parse("[null, -2.5]"));
      if (stream) {
        BOOST_TEST(p[1]["choices"][0]["text"] == " sat");
        BOOST_TEST(p[1]["choices"][0]["logprobs"]["text_offset"] == nlohmann::json::parse("[7]"));
      }
    }
  }
  // Without logprobs: the text alone, and no logprobs object.
  completions_encoder plain(completions_encoder::config{{"cmpl-2", "m", 7, false}});
  BOOST_TEST(payloads(plain.echo("The cat", {}, false))[0]["choices"][0]["logprobs"].is_null());
  plain.apply(out);
  const auto pb = nlohmann::json::parse(plain.body({}));
  BOOST_TEST(pb["choices"][0]["text"] == "The cat sat");
  BOOST_TEST(pb["choices"][0]["logprobs"].is_null());
}

// vLLM's prompt_logprobs: null first, then per token its own entry keyed by id and the
// alternatives not already listed, ranked by their place.
BOOST_AUTO_TEST_CASE(prompt_logprobs_are_keyed_by_token_id_with_rank_and_text) {
  const float none = std::numeric_limits<float>::quiet_NaN();
  std::vector<token_logprob> prompt(2);
  prompt[0] = {"The", none, {}, 5, 0};
  prompt[1] = {" cat", -2.5f, {{" dog", -1.0f, 9}, {" cat", -2.5f, 7}}, 7, 2};
  const auto j = prompt_logprobs_json(prompt);
  BOOST_TEST(j == nlohmann::ordered_json::parse(R"([null, {"7": {"logprob": -2.5, "rank": 2, "decoded_token": " cat"},
                                                           "9": {"logprob": -1.0, "rank": 1, "decoded_token": " dog"}}])"));
}

BOOST_AUTO_TEST_SUITE_END()
