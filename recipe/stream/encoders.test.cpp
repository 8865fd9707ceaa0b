#include "recipe/protocol/responses_request.hpp"
#include "recipe/stream/api_output.hpp"
#include "recipe/stream/chat_encoder.hpp"
#include "recipe/stream/completions_encoder.hpp"
#include "recipe/stream/messages_encoder.hpp"
#include "recipe/stream/responses_encoder.hpp"
#include "recipe/stream/test_support.hpp"

#include <limits>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <vector>

using namespace deepinfer::recipe;
using deepinfer::recipe::testing::payloads;

namespace {

std::vector<stream_event> answer_with_call() {
  std::vector<stream_event> evs(6);
  evs[0].type = stream_event::kind::reasoning;
  evs[0].text = "hm";
  evs[1].type = stream_event::kind::content;
  evs[1].text = "A \"q\"";
  evs[2].type = stream_event::kind::tool_call_start;
  evs[2].tool_id = "call_0";
  evs[2].tool_name = "f";
  evs[3].type = stream_event::kind::tool_call_arguments;
  evs[3].text = "{\"x\": 1}";
  evs[4].type = stream_event::kind::tool_call_end;
  evs[5].type = stream_event::kind::finish;
  evs[5].reason = finish_reason::tool_calls;
  return evs;
}


} // namespace

BOOST_AUTO_TEST_SUITE(encoders)

BOOST_AUTO_TEST_CASE(chat_chunks_carry_each_delta_and_end_with_usage_and_done) {
  chat_encoder enc(chat_encoder::config{{"chatcmpl-1", "m", 7, true}});
  const auto evs = answer_with_call();
  const usage_counts usage{10, 4, 6, 2};
  std::string sse = enc.start(); // sequenced: the encoders are stateful
  sse += enc.encode(evs, usage);
  BOOST_TEST(sse.substr(sse.size() - 14) == "data: [DONE]\n\n");
  const auto p = payloads(sse);
  BOOST_REQUIRE_EQUAL(p.size(), 7u); // role, reasoning, content, call start, arguments, finish, usage
  BOOST_TEST(p[0]["choices"][0]["delta"] == nlohmann::json::parse(R"({"role":"assistant","content":"","refusal":null})"));
  BOOST_TEST(p[1]["choices"][0]["delta"]["reasoning_content"] == "hm");
  BOOST_TEST(p[2]["choices"][0]["delta"]["content"] == "A \"q\"");
  BOOST_TEST(p[3]["choices"][0]["delta"]["tool_calls"][0] ==
             nlohmann::json::parse(R"({"index":0,"id":"call_0","type":"function","function":{"name":"f","arguments":""}})"));
  BOOST_TEST(p[4]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] == "{\"x\": 1}");
  BOOST_TEST(p[5]["choices"][0]["finish_reason"] == "tool_calls");
  BOOST_TEST(p[5]["usage"].is_null());
  BOOST_TEST(p[6]["choices"].empty());
  BOOST_TEST(p[6]["usage"]["prompt_tokens_details"]["cached_tokens"] == 4);
  BOOST_TEST(p[6]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 2);
  const auto body = nlohmann::json::parse(enc.body(usage));
  BOOST_TEST(body["choices"][0]["message"]["reasoning_content"] == "hm");
  // ChatCompletionMessage.refusal is `string | null`, never absent.
  BOOST_TEST(body["choices"][0]["message"].contains("refusal"));
  BOOST_TEST(body["choices"][0]["message"]["refusal"].is_null());
  BOOST_TEST(body["usage"]["total_tokens"] == 16);
}

BOOST_AUTO_TEST_CASE(several_choices_carry_their_index_and_one_end_closes_the_stream) {
  for (auto api : {api_kind::chat, api_kind::completions}) {
    conversation conv;
    conv.api = api;
    conv.model = "m";
    conv.stream = true;
    conv.stream_include_usage = true;
    api_output first(conv, "id-1", 7, 0, 2), second(conv, "id-1", 7, 1, 2);
    std::vector<stream_event> evs(2);
    evs[0].type = stream_event::kind::content;
    evs[0].text = "hi";
    evs[1].type = stream_event::kind::finish;
    const usage_counts usage{10, 0, 4, 0};
    std::string sse = first.start(usage) + second.start(usage);
    sse += first.encode(evs, usage);
    BOOST_TEST(sse.find("[DONE]") == std::string::npos); // a choice's finish leaves the stream open
    sse += second.encode(evs, usage);
    BOOST_TEST(sse.find("[DONE]") == std::string::npos);
    sse += first.end(usage);
    BOOST_TEST(sse.substr(sse.size() - 14) == "data: [DONE]\n\n");
    int finishes[2] = {0, 0};
    for (const auto& p : payloads(sse)) {
      if (p["choices"].empty()) {
        BOOST_TEST(p["usage"]["completion_tokens"] == 4); // the one usage chunk, at the end
        continue;
      }
      const int index = p["choices"][0]["index"];
      BOOST_REQUIRE(index >= 0);
      BOOST_REQUIRE(index <= 1);
      finishes[index] += p["choices"][0]["finish_reason"].is_string();
    }
    BOOST_TEST(finishes[0] == 1);
    BOOST_TEST(finishes[1] == 1);
    // The body: choice 0's with the other's choices after it, in order.
    const std::string other = second.body(usage);
    const auto body = nlohmann::json::parse(api_output::with_choices(first.body(usage), std::span(&other, 1)));
    BOOST_REQUIRE_EQUAL(body["choices"].size(), 2u);
    BOOST_TEST(body["choices"][0]["index"] == 0);
    BOOST_TEST(body["choices"][1]["index"] == 1);
    BOOST_TEST(body["usage"]["completion_tokens"] == 4);
  }
}

BOOST_AUTO_TEST_CASE(chat_logprobs_come_in_openai_shape_streaming_and_not) {
  const std::vector<token_logprob> lp = {{"A", -0.5f, {{"A", -0.5f}, {"B", -1.5f}}}, {" \xE2", -0.25f, {}},
                                         {"\x82\xAC", -0.125f, {}}};
  std::vector<stream_event> text(1), done(1);
  text[0].type = stream_event::kind::content;
  text[0].text = "A";
  done[0].type = stream_event::kind::finish;
  chat_encoder enc(chat_encoder::config{{"chatcmpl-1", "m", 7, false}});
  std::string sse = enc.start();
  // Each entry rides on the chunk of the text its token became; a token with no text yet (half
  // of the euro sign: the parser holds it) rides on the next chunk, here the finish.
  enc.logprobs(std::span(&lp[0], 1), true);
  sse += enc.encode(text, {});
  enc.logprobs(std::span(&lp[1], 2), true);
  sse += enc.encode(done, {});
  const auto p = payloads(sse);
  BOOST_REQUIRE_EQUAL(p.size(), 3u); // role, "A", finish
  BOOST_TEST(p[0]["choices"][0]["logprobs"].is_null());
  BOOST_TEST(p[1]["choices"][0]["delta"]["content"] == "A");
  const auto& c = p[1]["choices"][0]["logprobs"]["content"];
  BOOST_REQUIRE_EQUAL(c.size(), 1u);
  BOOST_TEST(c[0] == nlohmann::json::parse(R"({"token":"A","logprob":-0.5,"bytes":[65],"top_logprobs":[
    {"token":"A","logprob":-0.5,"bytes":[65]},{"token":"B","logprob":-1.5,"bytes":[66]}]})"));
  const auto& rest = p[2]["choices"][0]["logprobs"]["content"];
  BOOST_REQUIRE_EQUAL(rest.size(), 2u);
  BOOST_TEST(rest[0]["bytes"] == nlohmann::json::parse("[32,226]")); // a piece of UTF-8: the bytes are exact
  BOOST_TEST(p[2]["choices"][0]["finish_reason"] == "stop");
  const auto body = nlohmann::json::parse(enc.body({}));
  BOOST_REQUIRE_EQUAL(body["choices"][0]["logprobs"]["content"].size(), 3u);
  BOOST_TEST(body["choices"][0]["logprobs"]["content"][0] == c[0]);
  chat_encoder none(chat_encoder::config{{"chatcmpl-2", "m", 7, false}});
  none.apply(done);
  BOOST_TEST(nlohmann::json::parse(none.body({}))["choices"][0]["logprobs"].is_null());
}

// Each token's entry goes to the output text it became: reasoning's and a tool call's are
// dropped, a token whose text is held back (no event yet) rides on the next output text.
BOOST_AUTO_TEST_CASE(responses_logprobs_ride_on_the_output_text_they_became) {
  const token_logprob think{"hm", -0.1f, {}}, a{"A", -0.5f, {{"A", -0.5f}, {"B", -1.5f}}}, held{" \xE2", -0.25f, {}},
                      rest{"\x80\x94", -0.75f, {}}, call{"{", -2.0f, {}};
  auto evs = answer_with_call(); // reasoning "hm", content, call start, arguments, end, finish
  auto run = [&](bool stream) {
    responses_encoder enc({"resp_1", "m", 7, nlohmann::ordered_json::object()});
    std::string sse = enc.start();
    auto step = [&](const token_logprob& lp, std::span<const stream_event> e) {
      enc.logprobs(std::span(&lp, 1));
      if (stream)
        sse += enc.encode(e, {});
      else
        enc.apply(e);
    };
    step(think, std::span(evs).subspan(0, 1));
    step(a, std::span(evs).subspan(1, 1));
    step(held, {}); // its bytes wait for the rest of the character
    std::vector<stream_event> more(1);
    more[0].type = stream_event::kind::content;
    more[0].text = " \xE2\x80\x94";
    step(rest, more);
    step(call, std::span(evs).subspan(2));
    return std::pair{sse, nlohmann::json::parse(enc.body({}))};
  };
  const auto [sse, streamed] = run(true);
  std::vector<nlohmann::json> deltas, done;
  for (const auto& p : payloads(sse)) {
    if (p["type"] == "response.output_text.delta")
      deltas.push_back(p);
    if (p["type"] == "response.output_text.done")
      done.push_back(p);
  }
  BOOST_REQUIRE_EQUAL(deltas.size(), 2u);
  BOOST_REQUIRE_EQUAL(deltas[0]["logprobs"].size(), 1u);
  BOOST_TEST(deltas[0]["logprobs"][0] == nlohmann::json::parse(R"({"token":"A","logprob":-0.5,"bytes":[65],
    "top_logprobs":[{"token":"A","logprob":-0.5,"bytes":[65]},{"token":"B","logprob":-1.5,"bytes":[66]}]})"));
  BOOST_REQUIRE_EQUAL(deltas[1]["logprobs"].size(), 2u);
  BOOST_TEST(deltas[1]["logprobs"][0]["bytes"] == nlohmann::json::parse("[32,226]"));
  BOOST_TEST(deltas[1]["logprobs"][1]["logprob"] == -0.75);
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_REQUIRE_EQUAL(done[0]["logprobs"].size(), 3u);
  nlohmann::json msg;
  for (const auto& it : streamed["output"])
    if (it["type"] == "message")
      msg = it;
  BOOST_TEST(msg["content"][0]["logprobs"] == done[0]["logprobs"]);
  const auto body = run(false).second;
  for (const auto& it : body["output"])
    if (it["type"] == "message")
      BOOST_TEST(it["content"][0]["logprobs"] == done[0]["logprobs"]);
}

BOOST_AUTO_TEST_CASE(the_response_object_echoes_user_reasoning_and_text_format) {
  auto c = parse_responses_request(R"({"model": "m", "input": "q", "user": "u-7", "reasoning": {"effort": "low"},
      "text": {"format": {"type": "json_object"}}})");
  BOOST_TEST_REQUIRE(c.has_value());
  const auto e = nlohmann::json::parse(responses_echo(*c).dump());
  BOOST_TEST(e["user"] == "u-7");
  BOOST_TEST(e["reasoning"] == nlohmann::json::parse(R"({"effort": "low", "summary": null})"));
  BOOST_TEST(e["text"] == nlohmann::json::parse(R"({"format": {"type": "json_object"}})"));
  auto plain = parse_responses_request(R"({"model": "m", "input": "q"})");
  BOOST_TEST_REQUIRE(plain.has_value());
  const auto p = nlohmann::json::parse(responses_echo(*plain).dump());
  BOOST_TEST(!p.contains("user"));
  BOOST_TEST(p["reasoning"].is_null());
  BOOST_TEST(p["text"]["format"]["type"] == "text");
}

BOOST_AUTO_TEST_CASE(responses_events_are_numbered_and_close_every_item) {
  responses_encoder enc({"resp_1", "m", 7, nlohmann::ordered_json::object()});
  std::string sse = enc.start();
  sse += enc.encode(answer_with_call(), {10, 0, 6, 2});
  const auto p = payloads(sse);
  for (std::size_t i = 0; i < p.size(); ++i)
    BOOST_TEST(p[i]["sequence_number"] == i);
  std::vector<std::string> types;
  for (const auto& e : p)
    types.push_back(e["type"]);
  const std::vector<std::string> want = {
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done", "response.completed"};
  BOOST_TEST(types == want, boost::test_tools::per_element());
  BOOST_TEST(p.back()["response"]["output"].size() == 3u);
  BOOST_TEST(p.back()["response"]["usage"]["output_tokens_details"]["reasoning_tokens"] == 2);
}

BOOST_AUTO_TEST_CASE(messages_report_the_stop_sequence_that_ended_the_answer) {
  messages_encoder enc({"msg_1", "m"});
  std::vector<stream_event> evs(2);
  evs[0].type = stream_event::kind::content;
  evs[0].text = "done";
  evs[1].type = stream_event::kind::finish;
  evs[1].text = "END";
  const usage_counts usage{10, 4, 3, 0};
  std::string sse = enc.start(usage);
  sse += enc.encode(evs, usage);
  const auto p = payloads(sse);
  BOOST_TEST(p.front()["message"]["usage"]["input_tokens"] == 6); // uncached part only
  BOOST_TEST(p.front()["message"]["usage"]["cache_read_input_tokens"] == 4);
  const auto& delta = p[p.size() - 2];
  BOOST_TEST(delta["type"] == "message_delta");
  BOOST_TEST(delta["delta"]["stop_reason"] == "stop_sequence");
  BOOST_TEST(delta["delta"]["stop_sequence"] == "END");
  const auto body = nlohmann::json::parse(enc.body(usage));
  BOOST_TEST(body["stop_reason"] == "stop_sequence");
  BOOST_TEST(body["stop_sequence"] == "END");
}

BOOST_AUTO_TEST_CASE(a_stream_cut_short_ends_with_each_apis_error_event) {
  std::vector<stream_event> partial(1);
  partial[0].type = stream_event::kind::content;
  partial[0].text = "Hel";
  const usage_counts usage{10, 0, 1, 0};
  // Chat: an error chunk (the SDKs raise `data.error`), then [DONE]; no finish_reason chunk.
  chat_encoder chat(chat_encoder::config{{"chatcmpl-1", "m", 7, false}});
  std::string sse = chat.start(); // sequenced: the encoders are stateful
  sse += chat.encode(partial, usage);
  sse += chat.fail("server_error", "deadline_exceeded", "late");
  BOOST_TEST(sse.substr(sse.size() - 14) == "data: [DONE]\n\n");
  auto p = payloads(sse);
  BOOST_TEST(p.back()["error"]["code"] == "deadline_exceeded");
  BOOST_TEST(p.back()["error"]["message"] == "late");
  for (std::size_t i = 0; i + 1 < p.size(); ++i)
    BOOST_TEST(p[i]["choices"][0]["finish_reason"].is_null());
  // Responses: the open message item is closed, then `error` and `response.failed`.
  responses_encoder resp({"resp_1", "m", 7, nlohmann::ordered_json::object()});
  sse = resp.start();
  sse += resp.encode(partial, usage);
  sse += resp.fail("server_error", "deadline_exceeded", "late", usage);
  p = payloads(sse);
  BOOST_TEST(p[p.size() - 2]["type"] == "error");
  BOOST_TEST(p[p.size() - 2]["code"] == "deadline_exceeded");
  BOOST_TEST(p.back()["type"] == "response.failed");
  BOOST_TEST(p.back()["response"]["status"] == "failed");
  BOOST_TEST(p.back()["response"]["error"]["message"] == "late");
  BOOST_TEST(p.back()["response"]["output"][0]["content"][0]["text"] == "Hel");
  BOOST_TEST(sse.find("response.completed") == std::string::npos);
  // Messages: `event: error` with Anthropic's error object; no message_stop.
  messages_encoder msg({"msg_1", "m"});
  sse = msg.start(usage);
  sse += msg.encode(partial, usage);
  sse += msg.fail("timeout_error", "deadline_exceeded", "late");
  BOOST_TEST(sse.find("event: error\ndata: ") != std::string::npos);
  p = payloads(sse);
  BOOST_TEST(p.back()["type"] == "error");
  BOOST_TEST(p.back()["error"]["type"] == "timeout_error");
  BOOST_TEST(sse.find("message_stop") == std::string::npos);
}

// At the token limit the response is `incomplete` and so is the item the limit cut, streamed
// and not; an answer that ends on its own leaves its items completed.
BOOST_AUTO_TEST_CASE(responses_marks_the_item_cut_by_the_token_limit_incomplete) {
  std::vector<stream_event> evs(2);
  evs[0].type = stream_event::kind::content;
  evs[0].text = "partial";
  evs[1].type = stream_event::kind::finish;
  for (auto reason : {finish_reason::length, finish_reason::stop}) {
    evs[1].reason = reason;
    const char* want = reason == finish_reason::length ? "incomplete" : "completed";
    responses_encoder streamed({"resp_1", "m", 7, nlohmann::ordered_json::object()});
    std::string sse = streamed.start() + streamed.encode(evs, {});
    nlohmann::json done_item;
    for (const auto& p : payloads(sse))
      if (p["type"] == "response.output_item.done")
        done_item = p["item"];
    BOOST_TEST(done_item["status"] == want);
    const auto body = nlohmann::json::parse(streamed.body({}));
    BOOST_TEST(body["output"][0]["status"] == want);
    BOOST_TEST(body["status"] == want);
    responses_encoder plain({"resp_2", "m", 7, nlohmann::ordered_json::object()});
    plain.apply(evs);
    BOOST_TEST(nlohmann::json::parse(plain.body({}))["output"][0]["status"] == want);
  }
}

BOOST_AUTO_TEST_CASE(a_cancelled_background_response_keeps_what_it_generated) {
  auto evs = answer_with_call(); // reasoning "hm", content, call...
  for (bool stream : {true, false}) {
    BOOST_TEST_CONTEXT("stream " << stream) {
      responses_encoder enc({"resp_1", "m", 7, nlohmann::ordered_json::object()});
      const auto queued = nlohmann::json::parse(enc.queued());
      BOOST_TEST(queued["status"] == "queued");
      BOOST_TEST(queued["output"].empty());
      BOOST_TEST(queued["usage"].is_null());
      std::string sse = enc.start();
      auto first_two = std::span(evs).subspan(0, 2); // the reasoning and the text's start
      if (stream)
        sse += enc.encode(first_two, {});
      else
        enc.apply(first_two);
      const auto closing = enc.cancel();
      BOOST_TEST(closing.empty() == !stream);
      const auto body = nlohmann::json::parse(enc.body({5, 0, 2, 1}));
      BOOST_TEST(body["status"] == "cancelled");
      BOOST_REQUIRE(body["output"].size() == 2u);
      BOOST_TEST(body["output"][0]["type"] == "reasoning");
      BOOST_TEST(body["output"][1]["type"] == "message");
      BOOST_TEST(body["output"][1]["status"] == "incomplete"); // the item the cancel cut
      BOOST_TEST(body["output"][1]["content"][0]["text"] == "A \"q\"");
      BOOST_TEST(body["usage"]["output_tokens"] == 2);
      if (stream) { // the open item closed, and no completion claimed
        const auto p = payloads(sse + closing);
        BOOST_TEST(p.back()["type"] == "response.output_item.done");
        for (const auto& e : p)
          BOOST_TEST(e["type"] != "response.completed");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(continuous_usage_puts_the_usage_so_far_on_every_chunk) {
  std::vector<stream_event> evs(2);
  evs[0].type = stream_event::kind::content;
  evs[0].text = "A";
  evs[1].type = stream_event::kind::finish;
  evs[1].reason = finish_reason::stop;
  chat_encoder::config cc;
  cc.id = "chatcmpl-1";
  cc.model = "m";
  cc.created = 7;
  cc.include_usage = true;
  cc.continuous_usage = true;
  chat_encoder chat(cc);
  completions_encoder::config pc;
  pc.include_usage = true;
  pc.continuous_usage = true;
  completions_encoder plain(pc);
  for (int which = 0; which < 2; ++which) {
    BOOST_TEST_CONTEXT((which ? "completions" : "chat")) {
      std::string sse;
      auto feed = [&](auto& enc) {
        enc.usage_now({5, 0, 0, 0});
        sse += enc.start();
        enc.usage_now({5, 0, 1, 0});
        sse += enc.encode(std::span(evs).subspan(0, 1), {5, 0, 1, 0});
        enc.usage_now({5, 0, 2, 0});
        sse += enc.encode(std::span(evs).subspan(1), {5, 0, 2, 0});
      };
      if (which)
        feed(plain);
      else
        feed(chat);
      const auto p = payloads(sse);
      BOOST_REQUIRE(p.size() >= 3u);
      for (const auto& c : p) {
        BOOST_REQUIRE(c["usage"].is_object());
        BOOST_TEST(c["usage"]["prompt_tokens"] == 5);
        BOOST_TEST(c["usage"]["total_tokens"] == 5 + c["usage"]["completion_tokens"].get<int>());
      }
      BOOST_TEST(p.back()["usage"]["completion_tokens"] == 2); // the closing usage chunk
      BOOST_TEST(p.front()["usage"]["completion_tokens"] == (which ? 1 : 0)); // chat's role chunk comes first
    }
  }
}

// vLLM's Chat `echo`: the final assistant message's text leads the answer, streamed right after
// the role chunk, and in the body before what was generated.
BOOST_AUTO_TEST_CASE(chat_echo_leads_with_the_final_message) {
  std::vector<stream_event> ev(2);
  ev[0].type = stream_event::kind::content;
  ev[0].text = " world";
  ev[1].type = stream_event::kind::finish;
  chat_encoder::config cfg;
  cfg.id = "chatcmpl-1";
  cfg.model = "m";
  cfg.created = 7;
  cfg.echo = "Hello,";
  chat_encoder streamed(cfg);
  const auto p = payloads(streamed.start() + streamed.encode(ev, {}));
  BOOST_REQUIRE_EQUAL(p.size(), 4u);  // role, echo, " world", finish
  BOOST_TEST(p[0]["choices"][0]["delta"]["role"] == "assistant");
  BOOST_TEST(p[1]["choices"][0]["delta"]["content"] == "Hello,");
  BOOST_TEST(p[2]["choices"][0]["delta"]["content"] == " world");
  chat_encoder whole(cfg);
  whole.apply(ev);
  BOOST_TEST(nlohmann::json::parse(whole.body({}))["choices"][0]["message"]["content"] == "Hello, world");
  chat_encoder plain(chat_encoder::config{{"chatcmpl-2", "m", 7, false}});
  plain.apply(ev);
  BOOST_TEST(nlohmann::json::parse(plain.body({}))["choices"][0]["message"]["content"] == " world");
}

BOOST_AUTO_TEST_SUITE_END()
