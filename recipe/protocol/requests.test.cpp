#include "recipe/protocol/chat_request.hpp"
#include "recipe/protocol/messages_request.hpp"
#include "recipe/protocol/responses_request.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe;
using deepinfer::expected;

namespace {

std::string error_of(const expected<conversation, api_error>& r) { return r.has_value() ? "" : r.error().body(); }

} // namespace

BOOST_AUTO_TEST_SUITE(requests)

BOOST_AUTO_TEST_CASE(chat_thinking_follows_effort_and_thinking_switch) {
  const std::string msgs = R"("model": "m", "messages": [{"role": "user", "content": "x"}])";
  BOOST_TEST(!parse_chat_request("{" + msgs + "}")->thinking);
  BOOST_TEST(!parse_chat_request("{" + msgs + R"(, "reasoning_effort": "none"})")->thinking);
  auto low = parse_chat_request("{" + msgs + R"(, "reasoning_effort": "low"})");
  BOOST_TEST(low->thinking);
  BOOST_TEST(low->reasoning_effort == "low");
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "thinking": {"type": "enabled"}})")->thinking);
  BOOST_TEST(!parse_chat_request("{" + msgs + R"(, "thinking": {"type": "disabled"}})")->thinking);
}

BOOST_AUTO_TEST_CASE(chat_reads_sampling_and_ignores_unknown_fields) {
  auto c = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.5,
      "top_p": 0.9, "max_completion_tokens": 77, "stop": ["a", "b"], "seed": 3, "stream": true,
      "stream_options": {"include_usage": true}, "user": "u", "store": false, "some_future_field": {"x": 1}})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(*c->sampling.temperature == 0.5);
  BOOST_TEST(*c->sampling.max_tokens == 77);
  BOOST_TEST(c->sampling.stop == (std::vector<std::string>{"a", "b"}));
  BOOST_TEST(c->stream);
  BOOST_TEST(c->stream_include_usage);
  BOOST_TEST(!c->stream_continuous_usage);
  BOOST_TEST(c->sampling.n == 1);
  const std::string streamed = R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": true, )";
  BOOST_TEST(parse_chat_request(streamed + R"("stream_options": {"include_usage": true, "continuous_usage_stats": true}})")
               ->stream_continuous_usage);
  // vLLM: continuous stats only with include_usage.
  BOOST_TEST(!parse_chat_request(streamed + R"("stream_options": {"continuous_usage_stats": true}})")
                ->stream_continuous_usage);
  BOOST_TEST(parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 16})")->sampling.n == 16);
}

BOOST_AUTO_TEST_CASE(chat_errors_name_the_field) {
  auto e = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 3})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "temperature");
  e = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 17})");
  BOOST_TEST(e.error().param == "n");
  e = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {}})");
  BOOST_TEST(e.error().param == "stream_options");
  e = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url",
      "image_url": {"url": "ftp://x"}}]}]})");
  BOOST_TEST(e.error().param == "messages[0].content[0].image_url.url");
  e = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "bad name"}}]})");
  BOOST_TEST(e.error().param == "tools[0].function.name");
  // A megabyte-long value is quoted cut, at a character boundary; the error is not its echo.
  std::string role(1 << 20, 'a');
  role.replace(79, 2, "\xC3\xA9");
  e = parse_chat_request(R"({"model": "m", "messages": [{"role": ")" + role + R"(", "content": "x"}]})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "messages[0].role");
  BOOST_TEST(e.error().message.size() < 300u, e.error().message);
  BOOST_TEST(e.error().message.find("'" + std::string(79, 'a') + "...'") != std::string::npos, e.error().message);
}

BOOST_AUTO_TEST_CASE(each_api_says_a_missing_field_in_its_own_words) {
  auto chat = parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}]})");
  BOOST_REQUIRE(!chat.has_value());
  BOOST_TEST(chat.error().message == "Missing required parameter: 'model'.");
  auto messages = parse_messages_request(R"({"max_tokens": 4, "messages": [{"role": "user", "content": "x"}]})");
  BOOST_REQUIRE(!messages.has_value());
  BOOST_TEST(messages.error().body().find(R"("message":"model: Field required")") != std::string::npos, messages.error().body());
}

BOOST_AUTO_TEST_CASE(structured_outputs_takes_one_constraint_and_choice_becomes_an_escaped_alternation) {
  const std::string msgs = R"("model": "m", "messages": [{"role": "user", "content": "x"}])";
  auto c = parse_chat_request("{" + msgs + R"(, "structured_outputs": {"choice": ["a.b", "(c)|d"]}})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_REQUIRE(c->structured.has_value());
  BOOST_TEST((c->structured->kind == structured_outputs::mode::regex));
  BOOST_TEST(c->structured->text == R"((a\.b|\(c\)\|d))");
  BOOST_TEST(!c->format.has_value()); // not rendered into the prompt
  c = parse_chat_request("{" + msgs + R"(, "structured_outputs": {"json": {"type": "integer"}}})");
  BOOST_TEST(c->structured->text == R"({"type":"integer"})");
  auto e = parse_chat_request("{" + msgs + R"(, "structured_outputs": {"regex": "a", "grammar": "start: \"a\""}})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "structured_outputs");
  e = parse_chat_request("{" + msgs + R"(, "response_format": {"type": "json_object"}, "structured_outputs": {"regex": "a"}})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "structured_outputs");
}

BOOST_AUTO_TEST_CASE(responses_items_fold_into_turns) {
  auto c = parse_responses_request(R"({"model": "m", "instructions": "sys", "reasoning": {"effort": "high"}, "input": [
      {"role": "user", "content": "q"},
      {"type": "reasoning", "id": "r", "summary": [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "let me look"}]},
      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\": 1}"},
      {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c1", "output": "one"},
      {"type": "function_call_output", "call_id": "c2", "output": "two"}]})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(c->thinking);
  BOOST_REQUIRE_EQUAL(c->messages.size(), 5u); // system, user, assistant, tool, tool
  const auto& a = c->messages[2];
  BOOST_TEST((a.role == role::assistant));
  BOOST_TEST(*a.reasoning == "a\n\nb");
  BOOST_TEST(a.content.at(0).value == "let me look");
  BOOST_REQUIRE_EQUAL(a.tool_calls.size(), 2u);
  BOOST_TEST(a.tool_calls[1].id == "c2");
  BOOST_TEST(c->messages[4].tool_call_id == "c2");
  auto off = parse_responses_request(R"({"model": "m", "input": "x", "reasoning": {"effort": "none"}})");
  BOOST_TEST(!off->thinking);
}

BOOST_AUTO_TEST_CASE(messages_tool_results_come_before_the_rest_of_the_user_turn) {
  auto c = parse_messages_request(R"({"model": "m", "max_tokens": 10, "system": [{"type": "text", "text": "s"}],
      "messages": [{"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "x"},
         {"type": "tool_use", "id": "tu", "name": "f", "input": {"b": [1, 2], "a": "z"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu", "content": [{"type": "text", "text": "r"}]},
         {"type": "text", "text": "next"}]}]})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_REQUIRE_EQUAL(c->messages.size(), 5u); // system, user, assistant, tool, user
  BOOST_TEST(*c->messages[2].reasoning == "t");
  BOOST_TEST(c->messages[2].tool_calls.at(0).arguments == R"({"b":[1,2],"a":"z"})"); // key order kept
  BOOST_TEST((c->messages[3].role == role::tool));
  BOOST_TEST(c->messages[3].content.at(0).value == "r");
  BOOST_TEST(c->messages[4].content.at(0).value == "next");
}

BOOST_AUTO_TEST_CASE(messages_thinking_budget_must_fit_max_tokens) {
  auto e = parse_messages_request(R"({"model": "m", "max_tokens": 1000, "thinking": {"type": "enabled",
      "budget_tokens": 2000}, "messages": [{"role": "user", "content": "q"}]})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "max_tokens");
  e = parse_messages_request(R"({"model": "m", "max_tokens": 5000, "thinking": {"type": "enabled",
      "budget_tokens": 10}, "messages": [{"role": "user", "content": "q"}]})");
  BOOST_TEST(e.error().param == "thinking.budget_tokens");
  auto ok = parse_messages_request(R"({"model": "m", "max_tokens": 5000, "thinking": {"type": "enabled",
      "budget_tokens": 2048}, "messages": [{"role": "user", "content": "q"}]})");
  BOOST_TEST(ok->thinking);
  BOOST_TEST(*ok->thinking_budget == 2048);
}

BOOST_AUTO_TEST_CASE(messages_mcp_servers_are_refused_not_dropped) {
  auto e = parse_messages_request(R"({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "q"}],
      "mcp_servers": [{"type": "url", "url": "https://mcp.example/sse", "name": "x"}]})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "mcp_servers");
  BOOST_TEST(e.error().message.find("not supported") != std::string::npos, e.error().message);
  auto none = parse_messages_request(R"({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "q"}],
      "mcp_servers": []})");
  BOOST_TEST(none.has_value());
}

BOOST_AUTO_TEST_CASE(messages_empty_content_is_refused_except_for_a_final_assistant_prefill) {
  const auto refused = [](const std::string& messages) {
    return parse_messages_request(R"({"model": "m", "max_tokens": 10, "messages": )" + messages + "}");
  };
  auto e = refused(R"([{"role": "user", "content": []}])");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "messages.0.content");
  BOOST_TEST(e.error().body() ==
             R"({"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content: all messages )"
             R"(must have non-empty content except for the optional final assistant message"}})");
  e = refused(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}, {"role": "user", "content": "r"}])");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "messages.1.content");
  e = refused(R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": ""}]}])");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "messages.0.content.1.text");
  auto prefill = refused(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": []}])");
  BOOST_REQUIRE_MESSAGE(prefill.has_value(), error_of(prefill));
  BOOST_TEST(prefill->messages.size() == 2u);
}

BOOST_AUTO_TEST_CASE(messages_output_config_format_becomes_a_json_schema_format) {
  const std::string head = R"("model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "q"}])";
  auto c = parse_messages_request("{" + head + R"(, "output_config": {"effort": "xhigh", "format": {"type": "json_schema",
      "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_REQUIRE(c->format.has_value());
  BOOST_TEST((c->format->kind == response_format::mode::json_schema));
  BOOST_TEST(c->format->schema.dump() == R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  BOOST_TEST(c->reasoning_effort == "xhigh");
  // The beta API's deprecated spelling, the same object at the top level.
  auto beta = parse_messages_request("{" + head + R"(, "output_format": {"type": "json_schema", "schema": {"type": "object"}}})");
  BOOST_REQUIRE_MESSAGE(beta.has_value(), error_of(beta));
  BOOST_TEST(beta->format.has_value());
  auto e = parse_messages_request("{" + head + R"(, "output_config": {"format": {"type": "json_schema"}}})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "output_config.format.schema");
  e = parse_messages_request("{" + head + R"(, "output_config": {"format": {"type": "regex", "schema": {}}}})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "output_config.format.type");
}

BOOST_AUTO_TEST_CASE(messages_adaptive_thinking_turns_thinking_on_without_a_budget) {
  const std::string head = R"("model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "q"}])";
  auto c = parse_messages_request("{" + head + R"(, "thinking": {"type": "adaptive", "display": "summarized"}})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(c->thinking);
  BOOST_TEST(!c->thinking_budget.has_value());
  auto e = parse_messages_request("{" + head + R"(, "thinking": {"type": "adaptive", "display": "omitted"}})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "thinking.display");
}

BOOST_AUTO_TEST_CASE(vllm_min_p_and_guided_fields_are_read_or_refused_never_ignored) {
  const std::string msgs = R"("model": "m", "messages": [{"role": "user", "content": "x"}])";
  auto c = parse_chat_request("{" + msgs + R"(, "min_p": 0.25})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(*c->sampling.min_p == 0.25);
  auto e = parse_chat_request("{" + msgs + R"(, "min_p": 1.5})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "min_p");
  // vLLM's older guided_* spellings are structured_outputs under another name.
  c = parse_chat_request("{" + msgs + R"(, "guided_choice": ["yes", "no"]})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_REQUIRE(c->structured.has_value());
  BOOST_TEST((c->structured->kind == structured_outputs::mode::regex));
  BOOST_TEST(c->structured->text == "(yes|no)");
  c = parse_chat_request("{" + msgs + R"(, "guided_json": {"type": "integer"}})");
  BOOST_TEST(c->structured->text == R"({"type":"integer"})");
  c = parse_chat_request("{" + msgs + R"(, "guided_regex": "a+", "guided_decoding_backend": "xgrammar"})");
  BOOST_TEST(c->structured->text == "a+");
  c = parse_chat_request("{" + msgs + R"(, "guided_grammar": "start: \"a\""})");
  BOOST_TEST((c->structured->kind == structured_outputs::mode::grammar));
  // Two constraints: the 400 names the second one read (structured_outputs, then guided_json,
  // guided_regex, ...).
  for (const auto& [conflict, param] : std::vector<std::pair<std::string, std::string>>{
           {R"(, "guided_regex": "a", "guided_json": {}})", "guided_regex"},
           {R"(, "structured_outputs": {"regex": "a"}, "guided_json": {}})", "guided_json"},
           {R"(, "response_format": {"type": "json_object"}, "guided_json": {}})", "guided_json"}}) {
    e = parse_chat_request("{" + msgs + conflict);
    BOOST_REQUIRE(!e.has_value());
    BOOST_TEST(e.error().param == param, conflict);
  }
  e = parse_chat_request("{" + msgs + R"(, "guided_whitespace_pattern": 1})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "guided_whitespace_pattern");
  BOOST_TEST(e.error().message.find("not supported") != std::string::npos);
  // vLLM's structured_outputs options: compact JSON (alone beside a response_format, or with a
  // constraint), and JSON mode spelled as structured outputs.
  c = parse_chat_request("{" + msgs + R"(, "structured_outputs": {"json_object": true, "disable_any_whitespace": true}})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST((c->structured->kind == structured_outputs::mode::json_object));
  BOOST_TEST(c->compact_json);
  c = parse_chat_request("{" + msgs + R"(, "response_format": {"type": "json_object"},
      "structured_outputs": {"disable_any_whitespace": true}})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(!c->structured.has_value());
  BOOST_TEST(c->compact_json);
  BOOST_TEST(!parse_chat_request("{" + msgs + R"(, "guided_json": {}})")->compact_json);
  for (const auto* bad : {R"(, "structured_outputs": {"disable_any_whitespace": true}})",  // nothing to apply it to
                          R"(, "structured_outputs": {"json_object": false}})",
                          R"(, "structured_outputs": {"json": {}, "whitespace_pattern": " ?"}})",
                          R"(, "structured_outputs": {"json": {}, "disable_any_whitespace": 1}})"}) {
    e = parse_chat_request("{" + msgs + bad);
    BOOST_REQUIRE_MESSAGE(!e.has_value(), bad);
    BOOST_TEST(e.error().param.rfind("structured_outputs", 0) == 0, bad);
  }
  // vLLM's prompt_logprobs: a count (true is 1), not with a stream.
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "prompt_logprobs": 3})")->sampling.vllm_prompt_logprobs == 3);
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "prompt_logprobs": true})")->sampling.vllm_prompt_logprobs == 1);
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "prompt_logprobs": null})")->sampling.vllm_prompt_logprobs == -1);
  BOOST_TEST(parse_chat_request("{" + msgs + "}")->sampling.vllm_prompt_logprobs == -1);
  for (const auto* bad : {R"(, "prompt_logprobs": 21})", R"(, "prompt_logprobs": "x"})",
                          R"(, "prompt_logprobs": 1, "stream": true})"}) {
    e = parse_chat_request("{" + msgs + bad);
    BOOST_REQUIRE(!e.has_value());
    BOOST_TEST(e.error().param == "prompt_logprobs", bad);
  }
}

BOOST_AUTO_TEST_CASE(vllm_output_controls_are_read_with_vllms_types) {
  const std::string msgs = R"("model": "m", "messages": [{"role": "user", "content": "x"}])";
  auto c = parse_chat_request("{" + msgs + R"(, "stop_token_ids": [7, 3], "include_stop_str_in_output": true,
      "skip_special_tokens": false, "spaces_between_special_tokens": false, "allowed_token_ids": [9, 2, 9],
      "bad_words": ["foo", " bar baz"], "return_tokens_as_token_ids": true, "truncate_prompt_tokens": -1})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(c->sampling.stop_token_ids == (std::vector<std::int32_t>{7, 3}));
  BOOST_TEST(c->sampling.include_stop_str_in_output);
  BOOST_TEST(!c->sampling.skip_special_tokens);
  BOOST_TEST(c->sampling.allowed_token_ids == (std::vector<std::int32_t>{2, 9})); // sorted, unique
  BOOST_TEST(c->sampling.bad_words == (std::vector<std::string>{"foo", " bar baz"}));
  BOOST_TEST(c->sampling.return_tokens_as_token_ids);
  BOOST_TEST(*c->sampling.truncate_prompt_tokens == -1);
  auto d = parse_chat_request("{" + msgs + "}");
  BOOST_TEST(d->sampling.skip_special_tokens);
  BOOST_TEST(d->sampling.allowed_token_ids.empty());
  for (const char* bad : {R"("stop_token_ids": [-1])", R"("stop_token_ids": "7")", R"("stop_token_ids": [1.5])",
                          R"("allowed_token_ids": [])", R"("bad_words": ["  "])", R"("bad_words": "foo")",
                          R"("include_stop_str_in_output": "yes")", R"("return_tokens_as_token_ids": 1)",
                          R"("truncate_prompt_tokens": 0)", R"("truncate_prompt_tokens": -2)"}) {
    auto r = parse_chat_request("{" + msgs + ", " + bad + "}");
    BOOST_TEST_MESSAGE(bad);
    BOOST_TEST(!r.has_value());
  }
}

BOOST_AUTO_TEST_CASE(chat_template_kwargs_switch_thinking_and_functions_become_tools) {
  const std::string msgs = R"("model": "m", "messages": [{"role": "user", "content": "x"}])";
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "chat_template_kwargs": {"thinking": true}})")->thinking);
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "chat_template_kwargs": {"enable_thinking": true}})")->thinking);
  BOOST_TEST(!parse_chat_request("{" + msgs + R"(, "reasoning_effort": "high",
      "chat_template_kwargs": {"thinking": false}})")->thinking);
  auto e = parse_chat_request("{" + msgs + R"(, "chat_template_kwargs": {"thinking": "yes"}})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "chat_template_kwargs.thinking");
  auto c = parse_chat_request("{" + msgs + R"(, "functions": [{"name": "f", "parameters": {"type": "object"}}],
      "function_call": {"name": "f"}})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_REQUIRE_EQUAL(c->tools.size(), 1u);
  BOOST_TEST(c->tools[0].name == "f");
  BOOST_TEST((c->tool_choice.kind == tool_choice::mode::named));
  BOOST_TEST(c->tool_choice.name == "f");
  e = parse_chat_request("{" + msgs + R"(, "functions": [{"name": "f"}], "function_call": {"name": "g"}})");
  BOOST_REQUIRE(!e.has_value());
  e = parse_chat_request("{" + msgs + R"(, "functions": [{"name": "f"}], "tools": []})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "functions");
  e = parse_chat_request("{" + msgs + R"(, "modalities": ["text", "audio"]})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "modalities[1]");
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "modalities": ["text"]})").has_value());
  e = parse_chat_request("{" + msgs + R"(, "web_search_options": {"search_context_size": "low"}})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "web_search_options");
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "web_search_options": null})").has_value());
}

BOOST_AUTO_TEST_CASE(a_tool_whose_arguments_schema_is_not_an_object_is_refused_by_every_api) {
  const std::string msgs = R"("model": "m", "messages": [{"role": "user", "content": "x"}])";
  auto e = parse_chat_request("{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "string"}}}]})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "tools[0].function.parameters");
  BOOST_TEST(e.error().message.find("'type: \"object\"'") != std::string::npos, e.error().message);
  e = parse_chat_request("{" + msgs + R"(, "functions": [{"name": "f", "parameters": {"type": "array"}}]})");
  BOOST_TEST(e.error().param == "functions[0].parameters");
  e = parse_responses_request(R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f",
      "parameters": {"type": "integer"}}]})");
  BOOST_TEST(e.error().param == "tools[0].parameters");
  e = parse_messages_request(R"({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
      "tools": [{"name": "f", "input_schema": {"type": "string"}}]})");
  BOOST_TEST(e.error().param == "tools.0.input_schema");
  // An object schema, or one that leaves the type out, is fine.
  BOOST_TEST(parse_chat_request("{" + msgs + R"(, "tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"properties": {}}}}]})").has_value());
}

BOOST_AUTO_TEST_CASE(messages_reads_plain_text_documents_and_refuses_the_ones_it_cannot_read) {
  const std::string head = R"({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [)";
  auto c = parse_messages_request(head + R"({"type": "document", "title": "Notes", "context": "from a meeting",
      "source": {"type": "text", "media_type": "text/plain", "data": "hello doc"}}, {"type": "text", "text": "summarize"}]}]})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_REQUIRE(c->messages.at(0).content.size() == 2u);
  BOOST_TEST(c->messages[0].content[0].value == "Notes\n\nfrom a meeting\n\nhello doc");
  BOOST_TEST(c->messages[0].content[1].value == "summarize");
  c = parse_messages_request(head + R"({"type": "document", "source": {"type": "content", "content": [
      {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]}]})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(c->messages[0].content[0].value == "a\n\nb");
  auto e = parse_messages_request(head + R"({"type": "document", "source": {"type": "base64",
      "media_type": "application/pdf", "data": "JVBERi0="}}]}]})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "messages.0.content.0.source.type");
  BOOST_TEST(e.error().message.find("plain-text documents only") != std::string::npos);
  e = parse_messages_request(head + R"({"type": "document", "source": {"type": "text", "media_type": "text/html",
      "data": "<p>x</p>"}}]}]})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "messages.0.content.0.source.media_type");
}

BOOST_AUTO_TEST_CASE(responses_reads_truncation_and_background) {
  auto c = parse_responses_request(R"({"model": "m", "input": "x", "truncation": "auto", "background": true})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(c->truncate_auto);
  BOOST_TEST(c->background);
  c = parse_responses_request(R"({"model": "m", "input": "x", "truncation": null, "background": null})");
  BOOST_REQUIRE_MESSAGE(c.has_value(), error_of(c));
  BOOST_TEST(!c->truncate_auto);
  BOOST_TEST(!c->background);
  auto e = parse_responses_request(R"({"model": "m", "input": "x", "truncation": "middle"})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "truncation");
  e = parse_responses_request(R"({"model": "m", "input": "x", "background": true, "store": false})");
  BOOST_REQUIRE(!e.has_value());
  BOOST_TEST(e.error().param == "background");
}

BOOST_AUTO_TEST_SUITE_END()
