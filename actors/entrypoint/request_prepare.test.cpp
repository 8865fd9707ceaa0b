#include "actors/entrypoint/request_prepare.hpp"

#include "actors/entrypoint/serving_context.hpp"
#include "recipe/render/special_table.hpp"
#include "recipe/tokenizer/test_assets.hpp"
#include "recipe/vision/test_images.hpp"

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

/// context() with a vision encoder of the tiny model's shape (32-pixel cells).
const actors::entrypoint::context& vision_context() {
  static const auto ctx = [] {
    auto c = std::make_unique<actors::entrypoint::context>();
    c->cfg.model_name = context().cfg.model_name;
    c->tok = context().tok;
    c->specials = context().specials;
    c->vision.layers = 1;
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
  // OpenAI's routes carry the code GET /v1/models/{id} gives, so clients can tell it from a bad URL.
  auto chat_404 = prepare_request(context(), recipe::api_kind::chat, chat("x", 4, "gpt-4"), "");
  BOOST_REQUIRE(!chat_404.has_value());
  BOOST_TEST(chat_404.error().status == 404);
  const auto body = nlohmann::json::parse(chat_404.error().body());
  BOOST_TEST(body["error"]["code"] == "model_not_found");
  BOOST_TEST(body["error"]["param"] == "model");
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

BOOST_AUTO_TEST_CASE(image_urls_are_listed_once_and_their_fetch_errors_are_400s_naming_the_field) {
  const auto* ctx = &vision_context();
  const std::string body = R"({"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": [
      {"type": "text", "text": "two pictures"},
      {"type": "image_url", "image_url": {"url": "http://127.0.0.1:1/a.png"}},
      {"type": "image_url", "image_url": {"url": "http://127.0.0.1:1/a.png"}},
      {"type": "image_url", "image_url": {"url": "https://example.com/b.png"}}]}]})";
  auto conv = actors::parse_for_serving(*ctx, recipe::api_kind::chat, body, "");
  BOOST_REQUIRE(conv.has_value());
  const auto urls = actors::image_urls(*conv);
  BOOST_TEST((urls == std::vector<std::string>{"http://127.0.0.1:1/a.png", "https://example.com/b.png"}));
  // Not fetched at all (count_tokens' route): a 400 that says to send it inline.
  auto unfetched = actors::prepare_conversation(*ctx, *conv, "", {});
  BOOST_REQUIRE(!unfetched.has_value());
  BOOST_TEST(unfetched.error().status == 400);
  BOOST_TEST(unfetched.error().param == "messages[0].content[1].image_url.url");
  BOOST_TEST(unfetched.error().message.find("inline") != std::string::npos, unfetched.error().message);
  // The origin's 404: the image's field is named, with what the origin answered.
  const actors::http::fetch_error not_found{actors::http::fetch_error::kind::http_status,
                                            "the origin answered HTTP 404 Not Found"};
  auto gone = actors::prepare_conversation(*ctx, *conv, "", {{urls[0], not_found}, {urls[1], not_found}});
  BOOST_REQUIRE(!gone.has_value());
  BOOST_TEST(gone.error().param == "messages[0].content[1].image_url.url");
  BOOST_TEST(gone.error().message.find("Image 1 (message 1, part 2): cannot fetch http://127.0.0.1:1/a.png: the origin "
                                       "answered HTTP 404 Not Found.") != std::string::npos,
             gone.error().message);
  // Fetched bytes that are no image: decoded (and refused) like an inline image's.
  auto junk = actors::prepare_conversation(
    *ctx, *conv, "", {{urls[0], std::string("\x89PNG\r\n\x1a\n", 8) + "not really"}, {urls[1], not_found}});
  BOOST_REQUIRE(!junk.has_value());
  BOOST_TEST(junk.error().param == "messages[0].content[1].image_url.url");
  BOOST_TEST(junk.error().message.find("cannot fetch") == std::string::npos, junk.error().message);
}

// The lowered-priority parser decodes a large body's inline images (request_parse.cpp); prepare
// takes them from there, and gives what it would have decoded itself.
BOOST_AUTO_TEST_CASE(inline_images_decoded_ahead_are_the_ones_prepare_uses) {
  const auto* ctx = &vision_context();
  auto uri = [](int w, int h, uint8_t shade) {
    std::vector<uint8_t> px(static_cast<std::size_t>(w * h * 3));
    for (std::size_t i = 0; i < px.size(); ++i)
      px[i] = static_cast<uint8_t>(shade + i % 7);
    const auto png = recipe::test::png_file(w, h, px);
    BOOST_REQUIRE(!png.empty());
    return "data:image/png;base64," + recipe::test::base64(png);
  };
  const auto a = uri(64, 32, 10), b = uri(32, 32, 90), c = uri(64, 32, 200);
  const auto body = nlohmann::json{{"model", "m"}, {"max_tokens", 4},
                                   {"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "two pictures"}},
                                                                                {{"type", "image_url"}, {"image_url", {{"url", a}}}},
                                                                                {{"type", "image_url"}, {"image_url", {{"url", b}}}}}}}}}}
                      .dump();
  auto conv = actors::parse_for_serving(*ctx, recipe::api_kind::chat, body, "");
  BOOST_REQUIRE(conv.has_value());
  auto ahead = actors::decode_inline_images(*ctx, *conv);
  BOOST_REQUIRE_EQUAL(ahead.size(), 2u);
  BOOST_TEST(ahead.at({0, 1}).image.has_value());
  BOOST_TEST(ahead.at({0, 1}).uri_bytes == a.size());
  auto own = actors::prepare_conversation(*ctx, *conv, "", {});
  auto taken = actors::prepare_conversation(*ctx, *conv, "", {}, std::nullopt, &ahead);
  BOOST_REQUIRE(own.has_value());
  BOOST_REQUIRE(taken.has_value());
  BOOST_TEST(taken->prompt == own->prompt);
  BOOST_REQUIRE_EQUAL(taken->images.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    BOOST_TEST(taken->images[i].rgb == own->images[i].rgb);
    BOOST_TEST((taken->images[i].mark.content == own->images[i].mark.content));
  }
  // The entry really is what prepare uses: another picture under A's part.
  actors::decoded_inline_images swapped;
  swapped.emplace(std::make_pair(std::size_t{0}, std::size_t{1}),
                  actors::decoded_inline_image{a.size(), recipe::decode_data_uri(c, ctx->cfg.vision)});
  auto used = actors::prepare_conversation(*ctx, *conv, "", {}, std::nullopt, &swapped);
  BOOST_REQUIRE(used.has_value());
  BOOST_TEST(used->images[0].rgb != own->images[0].rgb);
  BOOST_TEST(used->images[1].rgb == own->images[1].rgb); // not in the map: decoded from its URI
  // An entry for another URI (its length differs) is ignored: the part is decoded again.
  swapped.clear();
  swapped.emplace(std::make_pair(std::size_t{0}, std::size_t{1}),
                  actors::decoded_inline_image{a.size() + 1, recipe::decode_data_uri(c, ctx->cfg.vision)});
  auto again = actors::prepare_conversation(*ctx, *conv, "", {}, std::nullopt, &swapped);
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST(again->images[0].rgb == own->images[0].rgb);
  // A part decoded ahead into an error is that image's 400.
  actors::decoded_inline_images broken;
  broken.emplace(std::make_pair(std::size_t{0}, std::size_t{2}),
                 actors::decoded_inline_image{b.size(), std::string("the bytes are not an image")});
  auto refused = actors::prepare_conversation(*ctx, *conv, "", {}, std::nullopt, &broken);
  BOOST_REQUIRE(!refused.has_value());
  BOOST_TEST(refused.error().status == 400);
  BOOST_TEST(refused.error().param == "messages[0].content[2].image_url.url");
  BOOST_TEST(refused.error().message.find("not an image") != std::string::npos, refused.error().message);
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
