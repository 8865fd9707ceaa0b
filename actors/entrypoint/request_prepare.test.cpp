#include "actors/entrypoint/request_prepare.hpp"

#include "actors/entrypoint/serving_context.hpp"
#include "recipe/render/special_table.hpp"
#include "recipe/tokenizer/test_assets.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace deepinfer;
using deepinfer::actors::prepare_request;

namespace {

/// What prepare_request reads from an entrypoint's context: config, tokenizer, specials.
const actors::entrypoint::context& context() {
  static const auto ctx = [] {
    auto c = std::make_unique<actors::entrypoint::context>();
    c->cfg.model_name = "m";
    c->tok = recipe::test::shared("tokenizer_v41.json");
    auto tok = c->tok;
    c->specials = *recipe::special_table::build(recipe::template_version::dsv41,
                                                [tok](std::string_view s) { return tok->special_id(s); });
    return c;
  }();
  return *ctx;
}

std::string chat(const std::string& content, int max_tokens = 16, const std::string& model = "m") {
  return nlohmann::json{{"model", model}, {"max_tokens", max_tokens},
                        {"messages", {{{"role", "user"}, {"content", content}}}}}.dump();
}

} // namespace

BOOST_AUTO_TEST_SUITE(request_prepare)

BOOST_AUTO_TEST_CASE(a_request_within_the_limits_gets_its_prompt_tokens) {
  auto r = prepare_request(context(), recipe::api_kind::chat, chat("Hello there"), "");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->prompt.size() > 3u);
  BOOST_TEST(r->max_tokens == 16);
  BOOST_TEST(r->salt.shared());
}

BOOST_AUTO_TEST_CASE(over_the_context_limit_says_by_how_much) {
  // Its bytes prove it: refused without tokenizing, with a lower bound.
  auto big = prepare_request(context(), recipe::api_kind::chat, chat(std::string(7u << 20, 'a')), "");
  BOOST_REQUIRE(!big.has_value());
  BOOST_TEST(big.error().status == 400);
  BOOST_TEST(big.error().message.find("at least") != std::string::npos, big.error().message);
  BOOST_TEST(big.error().message.find("over the limit") != std::string::npos);
  // Counted to the end: the exact number.
  std::string words;
  for (int i = 0; i < 41000; ++i)
    words += " w" + std::to_string(i % 10);
  auto exact = prepare_request(context(), recipe::api_kind::chat, chat(words), "");
  BOOST_REQUIRE(!exact.has_value());
  BOOST_TEST(exact.error().message.find("at least") == std::string::npos, exact.error().message);
  // max_tokens alone can exceed it.
  auto out = prepare_request(context(), recipe::api_kind::chat, chat("x", 50000), "");
  BOOST_REQUIRE(!out.has_value());
  BOOST_TEST(out.error().message.find("for the output alone") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unknown_model_is_404_in_the_apis_terms) {
  auto r = prepare_request(context(), recipe::api_kind::messages, chat("x", 4, "nope"), "");
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().status == 404);
  BOOST_TEST(r.error().type == "not_found_error");
}

BOOST_AUTO_TEST_CASE(each_key_and_salt_pair_is_its_own_namespace) {
  using actors::cache_salt_of;
  BOOST_TEST(cache_salt_of("", "").shared());
  const auto a = cache_salt_of("key-a", ""), b = cache_salt_of("", "key-a"), c = cache_salt_of("key-a", "s");
  BOOST_TEST((a != b));
  BOOST_TEST((a != c));
  BOOST_TEST((b != c));
  BOOST_TEST((cache_salt_of("ab", "c") != cache_salt_of("a", "bc")));
  BOOST_TEST((cache_salt_of("key-a", "s") == c));
  auto r = prepare_request(context(), recipe::api_kind::chat,
                           R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "cache_salt": "team-1"})", "k");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST((r->salt == cache_salt_of("k", "team-1")));
}

BOOST_AUTO_TEST_SUITE_END()

#include "recipe/protocol/chat_request.hpp"

BOOST_AUTO_TEST_SUITE(request_traffic_class)

// Blocks live by their request's class (agent 3 days, chatbot 7 days): tools or tool results make
// an agent request, and the client's metadata has the last word.
BOOST_AUTO_TEST_CASE(tools_or_tool_results_make_an_agent_request_unless_metadata_says_otherwise) {
  using actors::traffic_class_of;
  auto parse = [](const std::string& extra, const std::string& messages = R"([{"role": "user", "content": "hi"}])") {
    auto c = recipe::parse_chat_request(R"({"model": "m", "messages": )" + messages + extra + "}");
    BOOST_REQUIRE(c.has_value());
    return std::move(*c);
  };
  const std::string tools = R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])";
  BOOST_TEST((traffic_class_of(parse("")) == kv::traffic_class::chatbot));
  BOOST_TEST((traffic_class_of(parse(tools)) == kv::traffic_class::agent));
  BOOST_TEST((traffic_class_of(parse(tools + R"(, "metadata": {"traffic_class": "chatbot"})")) == kv::traffic_class::chatbot));
  BOOST_TEST((traffic_class_of(parse(R"(, "metadata": {"traffic_class": "agent"})")) == kv::traffic_class::agent));
  const std::string tool_turn = R"([{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c1",
      "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "42"}])";
  BOOST_TEST((traffic_class_of(parse("", tool_turn)) == kv::traffic_class::agent));
}

BOOST_AUTO_TEST_SUITE_END()
