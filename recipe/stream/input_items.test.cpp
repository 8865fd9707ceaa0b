#include "recipe/stream/input_items.hpp"

#include <boost/test/unit_test.hpp>

#include <set>

using namespace deepinfer::recipe;

namespace {

std::vector<message> conversation_with_a_tool_call() {
  message user;
  user.content = {content_part::text("Weather in Paris?"), content_part::image("data:image/png;base64,AAAA")};
  message assistant;
  assistant.role = role::assistant;
  assistant.reasoning = "Need the tool.";
  assistant.tool_calls = {{"call_1", "get_weather", R"({"city":"Paris"})"}};
  message result;
  result.role = role::tool;
  result.tool_call_id = "call_1";
  result.content = {content_part::text("sunny")};
  message answer;
  answer.role = role::assistant;
  answer.content = {content_part::text("It is sunny.")};
  message again;
  again.content = {content_part::text("And tomorrow?")};
  return {user, assistant, result, answer, again};
}

} // namespace

BOOST_AUTO_TEST_SUITE(input_items)

BOOST_AUTO_TEST_CASE(every_kind_of_turn_becomes_its_responses_item_newest_first) {
  const auto input = conversation_with_a_tool_call();
  auto page = input_items_page(input, "resp_abc", {});
  BOOST_REQUIRE(page.has_value());
  const auto& data = (*page)["data"];
  // user, reasoning, function_call, function_call_output, assistant message, user: newest first.
  BOOST_REQUIRE_EQUAL(data.size(), 6u);
  BOOST_TEST(data[5]["type"] == "message");
  BOOST_TEST(data[5]["role"] == "user");
  BOOST_TEST(data[5]["content"][0]["type"] == "input_text");
  BOOST_TEST(data[5]["content"][1]["type"] == "input_image");
  BOOST_TEST(data[4]["type"] == "reasoning");
  BOOST_TEST(data[4]["content"][0]["text"] == "Need the tool.");
  BOOST_TEST(data[3]["type"] == "function_call");
  BOOST_TEST(data[3]["call_id"] == "call_1");
  BOOST_TEST(data[3]["arguments"] == R"({"city":"Paris"})");
  BOOST_TEST(data[2]["type"] == "function_call_output");
  BOOST_TEST(data[2]["output"] == "sunny");
  BOOST_TEST(data[1]["role"] == "assistant");
  BOOST_TEST(data[1]["content"][0]["type"] == "output_text");
  BOOST_TEST(data[0]["content"][0]["text"] == "And tomorrow?");
  BOOST_TEST((*page)["first_id"] == data[0]["id"]);
  BOOST_TEST((*page)["last_id"] == data[5]["id"]);
  BOOST_TEST((*page)["has_more"] == false);
  // Ids: unique, and the same on every call.
  std::set<std::string> ids;
  for (const auto& i : data)
    ids.insert(i["id"].get<std::string>());
  BOOST_TEST(ids.size() == 6u);
  BOOST_TEST(*input_items_page(input, "resp_abc", {}) == *page);
  BOOST_TEST(data[0]["id"].get<std::string>().starts_with("msg_abc"));
}

BOOST_AUTO_TEST_CASE(pages_follow_limit_order_and_after) {
  const auto input = conversation_with_a_tool_call();
  auto q = parse_input_items_query("limit=2&order=asc&include[]=message.input_image.image_url");
  BOOST_REQUIRE(q.has_value());
  std::vector<std::string> seen;
  for (int pages = 0; pages < 5; ++pages) {
    auto page = input_items_page(input, "resp_x", *q);
    BOOST_REQUIRE(page.has_value());
    for (const auto& i : (*page)["data"])
      seen.push_back(i["id"]);
    if (!(*page)["has_more"].get<bool>())
      break;
    q->after = (*page)["last_id"];
  }
  BOOST_REQUIRE_EQUAL(seen.size(), 6u);
  auto all = input_items_page(input, "resp_x", {100, true, ""});
  for (std::size_t i = 0; i < seen.size(); ++i)
    BOOST_TEST(seen[i] == (*all)["data"][i]["id"]);
  BOOST_TEST(!parse_input_items_query("limit=0").has_value());
  BOOST_TEST(!parse_input_items_query("limit=101").has_value());
  BOOST_TEST(!parse_input_items_query("order=up").has_value());
  auto unknown = input_items_page(input, "resp_x", {20, false, "msg_nope"});
  BOOST_REQUIRE(!unknown.has_value());
  BOOST_TEST(unknown.error().param == "after");
  auto empty = input_items_page({}, "resp_x", {});
  BOOST_TEST((*empty)["data"].empty());
  BOOST_TEST((*empty)["first_id"].is_null());
}

BOOST_AUTO_TEST_SUITE_END()
