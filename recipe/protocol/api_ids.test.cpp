#include "recipe/protocol/api_ids.hpp"

#include <boost/test/unit_test.hpp>

#include <regex>
#include <set>

using namespace deepinfer::recipe;

BOOST_AUTO_TEST_SUITE(api_ids_draw)

// With `n` > 1 each choice makes its own tool calls: a client that keys tool results by id, or
// merges choices, must never see one id twice.
BOOST_AUTO_TEST_CASE(every_choice_gets_its_own_tool_call_prefix) {
  const auto chat = api_ids::draw(api_kind::chat, 3);
  BOOST_REQUIRE_EQUAL(chat.tool_prefixes.size(), 3u);
  BOOST_TEST(std::set<std::string>(chat.tool_prefixes.begin(), chat.tool_prefixes.end()).size() == 3u);
  for (const auto& p : chat.tool_prefixes)
    BOOST_TEST(std::regex_match(p, std::regex{"call_[0-9A-Za-z]{24}_"}), p);
  BOOST_TEST(std::regex_match(chat.response, std::regex{"chatcmpl-[0-9A-Za-z]{29}"}), chat.response);
  const auto messages = api_ids::draw(api_kind::messages);
  BOOST_REQUIRE_EQUAL(messages.tool_prefixes.size(), 1u);
  BOOST_TEST(std::regex_match(messages.tool_prefixes[0], std::regex{"toolu_01[0-9A-Za-z]{22}_"}));
}

BOOST_AUTO_TEST_SUITE_END()
