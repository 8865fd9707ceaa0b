#include "recipe/render/renderer.hpp"
#include "recipe/render/segment_builder.hpp"

#include "recipe/protocol/parse_request.hpp"
#include "recipe/testdata/tokenizers.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe;

namespace {

const special_table& table(template_version v) { return test::real_table(v); }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  std::size_t a = 0;
  while (a < s.size() && (s[a] == '\n' || s[a] == ' '))
    ++a;
  return s.substr(a);
}

} // namespace

BOOST_AUTO_TEST_SUITE(renderer)

BOOST_AUTO_TEST_CASE(dsv32_fixture_renders_byte_for_byte) {
  const auto dir = test::source_dir() + "/recipe/testdata/dsv32_fixture/";
  auto input = nlohmann::ordered_json::parse(test::read_file(dir + "test_input.json"));
  // The official test: tools on messages[0] (our parser attaches request tools to the first system
  // message), thinking mode, BOS on.
  input["model"] = "deepseek";
  input["thinking"] = {{"type", "enabled"}};
  auto conv = parse_request_json(api_kind::chat, input);
  BOOST_REQUIRE_MESSAGE(conv.has_value(), (conv.has_value() ? "" : conv.error().body()));
  auto segs = render(*conv, table(template_version::dsv32));
  BOOST_REQUIRE(segs.has_value());
  const auto want = trim(test::read_file(dir + "test_output.txt"));
  const auto got = to_text(*segs);
  BOOST_TEST(got.size() == want.size());
  BOOST_TEST(got == want);
  // Special segments carry the V3.2 ids from the tokenizer file: BOS first, EOS last, and
  // `<think>` is 128798 (V4.1 puts it at 128821).
  BOOST_TEST(segs->front().special_id.value_or(-1) == 0);
  BOOST_TEST(segs->back().special_id.value_or(-1) == 1);
  bool think = false;
  for (const auto& s : *segs)
    think = think || (s.text == "<think>" && s.special_id == 128798);
  BOOST_TEST(think);
}

BOOST_AUTO_TEST_CASE(dsv32_fixture_encodes_to_the_reference_token_count) {
  // spec fixture README: 1,442 tokens with the V3.2 tokenizer (segment and whole-string encoding agree).
  const auto dir = test::source_dir() + "/recipe/testdata/dsv32_fixture/";
  auto input = nlohmann::ordered_json::parse(test::read_file(dir + "test_input.json"));
  input["model"] = "deepseek";
  input["thinking"] = {{"type", "enabled"}};
  auto segs = render(*parse_request_json(api_kind::chat, input), table(template_version::dsv32));
  const auto ids = test::real_tokenizer(template_version::dsv32).encode(*segs);
  BOOST_TEST(ids.size() == 1442u);
  BOOST_TEST(ids == test::real_tokenizer(template_version::dsv32).encode_with_special_tokens(to_text(*segs)));
}

BOOST_AUTO_TEST_CASE(table_from_tokenizer_file_matches_the_tokenizer) {
  for (auto v : {template_version::dsv32, template_version::dsv41}) {
    auto from_file = special_table::from_tokenizer_json(v, test::tokenizer_path(std::string(to_string(v))));
    BOOST_REQUIRE(from_file.has_value());
    BOOST_TEST(from_file->entries() == table(v).entries());
  }
  // V3.2 and V4.1 disagree on the thinking ids; both come from the files.
  BOOST_TEST(*table(template_version::dsv32).id(spelling::think_open) == 128798);
  BOOST_TEST(*table(template_version::dsv41).id(spelling::think_open) == 128821);
  BOOST_TEST(*table(template_version::dsv41).id(spelling::dsml) == 128825);
}

// A continued final assistant message (Anthropic's prefill, vLLM's continue_final_message) is
// the prompt's end: the same text as the complete turn up to its content, without the EOS and the
// new turn's opener; with thinking on and only reasoning in it, the reasoning is left open.
BOOST_AUTO_TEST_CASE(a_continued_final_assistant_message_is_left_open) {
  auto body = [](const std::string& last, bool thinking) {
    nlohmann::ordered_json j = {{"model", "m"}, {"max_tokens", 10},
                                {"messages", nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Name a colour."})" +
                                                                             (last.empty() ? "" : ", " + last) + "]")}};
    if (thinking) {
      j["thinking"] = {{"type", "enabled"}, {"budget_tokens", 1024}};
      j["max_tokens"] = 2048;
    }
    return j;
  };
  for (auto v : {template_version::dsv32, template_version::dsv41}) {
    const auto& t = table(v);
    const std::string think_open(spelling::think_open), think_close(spelling::think_close);
    auto text_of = [&](api_kind api, const nlohmann::ordered_json& j) {
      auto conv = parse_request_json(api, j);
      BOOST_REQUIRE_MESSAGE(conv.has_value(), (conv.has_value() ? "" : conv.error().body()));
      auto segs = render(*conv, t);
      BOOST_REQUIRE(segs.has_value());
      return to_text(*segs);
    };
    const auto open = text_of(api_kind::messages, body(R"({"role": "assistant", "content": "The colour is"})", false));
    const auto question = body("", false);
    const auto asked = text_of(api_kind::messages, question);
    BOOST_TEST(open == asked + "The colour is"); // after the user turn's opener, nothing else
    // The same through Chat with continue_final_message; without it a final assistant turn is
    // complete (EOS) and not continued.
    auto chat = body(R"({"role": "assistant", "content": "The colour is"})", false);
    chat.erase("max_tokens");
    chat["continue_final_message"] = true;
    BOOST_TEST(text_of(api_kind::chat, chat) == open);
    chat.erase("continue_final_message");
    BOOST_TEST(text_of(api_kind::chat, chat).find("The colour is<｜end▁of▁sentence｜>") != std::string::npos);
    // Thinking on: text continues after the closed reasoning; reasoning alone stays open.
    const auto with_both = text_of(api_kind::messages, body(R"({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Blue is common.", "signature": "s"}, {"type": "text", "text": "Blue"}]})", true));
    BOOST_TEST(with_both.ends_with("Blue is common." + think_close + "Blue"));
    const auto reasoning_only = text_of(api_kind::messages, body(R"({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Blue is", "signature": "s"}]})", true));
    BOOST_TEST(reasoning_only.ends_with(think_open + "Blue is"));
    BOOST_TEST(reasoning_only == text_of(api_kind::messages, body("", true)) + "Blue is");
    // A continued message with tool calls is refused (the call block ends the turn).
    auto calls = parse_request_json(api_kind::messages, body(R"({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]})", false));
    BOOST_REQUIRE(calls.has_value());
    auto refused = render(*calls, t);
    BOOST_REQUIRE(!refused.has_value());
    BOOST_TEST(refused.error().param == "messages.1.content");
  }
}

BOOST_AUTO_TEST_SUITE_END()
