#include "recipe/json_parse.hpp"

#include "recipe/protocol/parse_request.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

using namespace deepinfer::recipe;

namespace {

std::string nested(std::size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

} // namespace

BOOST_AUTO_TEST_SUITE(json_parse_suite)

BOOST_AUTO_TEST_CASE(keeps_key_order_and_values_like_nlohmann) {
  const std::string text = R"({"b": 1, "a": [true, null, "x", -2, 3.5, 18446744073709551615], "c": {"z": {}, "y": []}})";
  auto j = parse_json(text);
  BOOST_REQUIRE(j.has_value());
  BOOST_TEST(j->dump() == nlohmann::ordered_json::parse(text).dump());
  BOOST_TEST(j->begin().key() == "b");
}

BOOST_AUTO_TEST_CASE(a_duplicate_key_keeps_its_first_place_and_its_last_value) {
  auto j = parse_json(R"({"a": 1, "b": 2, "a": 3})");
  BOOST_REQUIRE(j.has_value());
  BOOST_TEST(j->dump() == R"({"a":3,"b":2})");
  // Past the size where duplicates are found through the hash index.
  std::string wide = "{";
  for (int i = 0; i < 100; ++i)
    wide += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  wide += R"("k7": "last"})";
  auto w = parse_json(wide);
  BOOST_REQUIRE(w.has_value());
  BOOST_TEST(w->size() == 100u);
  BOOST_TEST((*w)["k7"] == "last");
  BOOST_TEST(std::next(w->begin(), 7).key() == "k7");
}

BOOST_AUTO_TEST_CASE(depth_limit_holds_at_the_boundary) {
  BOOST_TEST(parse_json(nested(64)).has_value());
  auto deep = parse_json(nested(65));
  BOOST_REQUIRE(!deep.has_value());
  BOOST_TEST((deep.error().what == json_parse_error::kind::too_deep));
  BOOST_TEST(deep.error().message.find("64") != std::string::npos);
  // Objects count as levels too, and a custom limit applies.
  BOOST_TEST(!parse_json(R"({"a": {"b": {"c": 1}}})", json_limits{2}).has_value());
  BOOST_TEST(parse_json(R"({"a": {"b": {"c": 1}}})", json_limits{3}).has_value());
}

BOOST_AUTO_TEST_CASE(seventy_thousand_levels_are_refused_without_building_them) {
  // The probe that crashed the server: 140 KB of brackets, then a later key.
  const std::string body = R"({"x":)" + nested(70000) + R"(,"model":"m"})";
  auto r = parse_json(body);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().what == json_parse_error::kind::too_deep));
  auto req = parse_request(api_kind::chat, body);
  BOOST_REQUIRE(!req.has_value());
  BOOST_TEST(req.error().status == 400);
  BOOST_TEST(req.error().message.find("too deeply nested") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(syntax_errors_say_where) {
  auto r = parse_json(R"({"a": })");
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().what == json_parse_error::kind::syntax));
  BOOST_TEST(r.error().position == 7u);
  BOOST_TEST(r.error().message.find("byte 7") != std::string::npos);
  BOOST_TEST(!parse_json("").has_value());
  BOOST_TEST(!parse_json("[1] 2").has_value());
}

BOOST_AUTO_TEST_CASE(a_lone_surrogate_escape_reads_as_the_replacement_character) {
  const std::string fffd = "\xEF\xBF\xBD", emoji = "\xF0\x9F\x98\x80";
  auto value = [](const std::string& text) {
    auto r = parse_json(text);
    BOOST_REQUIRE_MESSAGE(r.has_value(), text << ": " << (r ? "" : r.error().message));
    return r->get<std::string>();
  };
  // A pair is one character and needs no repair; each half alone is U+FFFD.
  BOOST_TEST(!replace_lone_surrogates(R"("a\ud83d\ude00b")").has_value());
  BOOST_TEST(value(R"("a\ud83d\ude00b")") == "a" + emoji + "b");
  BOOST_TEST(value(R"("cut\ud83d")") == "cut" + fffd);
  BOOST_TEST(value(R"("\ude00x")") == fffd + "x");
  BOOST_TEST(value(R"("\ud83d\u0041")") == fffd + "A");
  BOOST_TEST(value(R"("\uD83D\uD83D\uDE00")") == fffd + emoji);
  BOOST_TEST(value(R"("\ude00\ud83d")") == fffd + fffd);
  // An escaped backslash followed by "ud800" is text, not an escape.
  BOOST_TEST(!replace_lone_surrogates(R"("\\ud800")").has_value());
  BOOST_TEST(value(R"("\\ud800")") == "\\ud800");
  // Same length: a later syntax error is reported where the client's text has it.
  auto r = parse_json(R"({"a": "\ud800", })");
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().position == parse_json(R"({"a": "\u0041", })").error().position);
}

BOOST_AUTO_TEST_CASE(a_wide_object_parses_in_linear_time) {
  // 160k keys took 54 s with nlohmann's builder (each key searched all earlier ones); linear
  // parsing takes well under a second even on a loaded two-core machine.
  std::string body = R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "junk": {)";
  for (int i = 0; i < 160000; ++i)
    body += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  body += "}}";
  const auto t0 = std::chrono::steady_clock::now();
  auto req = parse_request(api_kind::chat, body);
  const auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_REQUIRE(req.has_value());
  BOOST_TEST(s < 5.0, "160k-key object parsed in " << s << " s");
}

BOOST_AUTO_TEST_CASE(deep_values_are_refused_in_every_nested_field) {
  const auto deep = nested(100, "{}");
  const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
  auto refused = [](api_kind api, const std::string& body) {
    auto r = parse_request(api, body);
    return !r.has_value() && r.error().status == 400;
  };
  // Body fields: unknown ones, metadata, tool parameters, response schemas.
  BOOST_TEST(refused(api_kind::chat, R"({"model": "m", )" + user + R"(, "metadata": {"a": )" + deep + "}}"));
  BOOST_TEST(refused(api_kind::chat, R"({"model": "m", )" + user +
                                       R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"p": )" +
                                       deep + "}}}]}"));
  BOOST_TEST(refused(api_kind::messages, R"({"model": "m", "max_tokens": 4, )" + user +
                                           R"(, "tools": [{"name": "f", "input_schema": {"p": )" + deep + "}}]}"));
  BOOST_TEST(refused(api_kind::responses, R"({"model": "m", "input": "x", "text": {"format": {"type": "json_schema",
      "name": "s", "schema": {"p": )" + deep + "}}}}"));
  // Tool-call arguments are JSON inside a string: checked under the same limit, and the error
  // names the field.
  std::string args = nested(100, "{}");
  auto chat = parse_request(api_kind::chat, R"({"model": "m", "messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f",
      "arguments": "{\"a\": )" + args + R"(}"}}]}]})");
  BOOST_REQUIRE(!chat.has_value());
  BOOST_TEST(chat.error().param == "messages[1].tool_calls[0].function.arguments");
  BOOST_TEST(chat.error().message.find("too deeply nested") != std::string::npos);
  // The limit is the caller's: the same body passes under a higher one.
  BOOST_TEST(parse_request(api_kind::chat, R"({"model": "m", )" + user + R"(, "metadata": {"a": )" + deep + "}}",
                           json_limits{128})
               .has_value());
}

BOOST_AUTO_TEST_SUITE_END()
