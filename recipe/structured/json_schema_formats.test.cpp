// String formats: unknown names are annotations (JSON Schema 2020-12 §7.2.3), `regex` is a
// pattern both ECMA-262 and Python compile, `uri-template` is RFC 6570.
#include "recipe/structured/byte_automaton.hpp"
#include "recipe/structured/json_lexemes.hpp"
#include "recipe/structured/test_support.hpp"

#include <boost/test/unit_test.hpp>

#include <random>
#include <regex>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::so::test::accepts;
using deepinfer::recipe::so::test::agrees_with_validator;
using deepinfer::recipe::so::test::schema_matcher;

namespace {
std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }
} // namespace

BOOST_AUTO_TEST_SUITE(structured_json_schema)

// "An implementation MUST NOT fail to validate or cease processing due to an unknown format
// attribute": such a format constrains nothing, and the schema's other keywords still hold.
BOOST_AUTO_TEST_CASE(an_unknown_format_is_an_annotation) {
  auto m = schema_matcher(R"({"type":"string","format":"url","maxLength":5})");
  BOOST_TEST(accepts(*m, R"("x")"));
  BOOST_TEST(accepts(*m, R"("a b")"));
  BOOST_TEST(!accepts(*m, R"("toolong")"));
  BOOST_TEST(!accepts(*m, "1"));
  // No type: any value; beside a known format in an allOf, the known one holds.
  auto any = schema_matcher(R"({"format":"topic"})");
  BOOST_TEST(accepts(*any, "1"));
  BOOST_TEST(accepts(*any, R"("anything")"));
  auto both = schema_matcher(R"({"allOf":[{"format":"url"},{"type":"string","format":"date"}]})");
  BOOST_TEST(accepts(*both, R"("2024-02-29")"));
  BOOST_TEST(!accepts(*both, R"("2024-02-30")"));
  for (const char* s : {R"({"type":"object","properties":{"p":{"type":"string","format":"path"}},"required":["p"]})",
                        R"({"type":"array","items":{"format":"non-blank","minLength":1}})"})
    agrees_with_validator(s, {R"({"p":"/a/b"})", R"({"p":1})", R"({})", R"(["a",""])", R"([1,"x"])", R"([])"});
  // known_format names exactly the formats that constrain.
  for (const char* name : {"date", "time", "date-time", "uuid", "email", "idn-email", "uri", "iri", "ipv4", "ipv6",
                           "hostname", "idn-hostname", "duration", "uri-reference", "iri-reference", "json-pointer",
                           "relative-json-pointer", "byte", "binary", "password", "regex", "uri-template", "url",
                           "topic", "int32", "color", ""})
    BOOST_TEST(json_lex::known_format(name) == json_lex::format(name).has_value(), name);
}

BOOST_AUTO_TEST_CASE(format_regex_is_a_pattern_ecma_and_python_both_compile) {
  auto m = schema_matcher(R"({"type":"string","format":"regex"})");
  for (const char* good : {"", "^[a-z]+$", "(a|b)*c{2,3}", "\\d+(?:\\.\\d+)?", "^(?!x)[\\w.-]+@\\S+$", "[^\\]]",
                           "a{2,}?|b{10}", "[-+]?\\d+", "[a-z0-9-]", "\\u00e9\\x41\\/", "((((a))))", "[A-Za-z0-9_\\-]", "a|", "é+"})
    BOOST_TEST(accepts(*m, json_string(good)), good);
  for (const char* bad : {"(", ")", "a**", "*a", "[z-a]", "a{3,2}", "\\", "[]", "(?<n>a)", "\\1", "a{", "^*",
                          "(((((a)))))", "[a", "(?<=a)b"})
    BOOST_TEST(!accepts(*m, json_string(bad)), bad);
  // Every accepted string compiles as an ECMAScript regex (std::regex's grammar): random
  // strings over the syntax characters, the accepted ones checked (on the format's automaton,
  // which the schema's masks are built from).
  auto b = budget::unbounded();
  const auto format = byte_dfa::of(json_lex::string_of(*json_lex::format("regex")), b);
  std::mt19937 rng(12345);
  const std::string alphabet = "ab()[]{}|*+?^$\\.-,0129dwbxu:=!<";
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 9);
    for (int k = 0; k < n; ++k)
      s += alphabet[rng() % alphabet.size()];
    if (!format.matches(json_string(s)))
      continue;
    ++accepted;
    BOOST_CHECK_NO_THROW(std::regex(s, std::regex::ECMAScript));
  }
  BOOST_TEST(accepted > 200);  // the check saw real patterns, not only refusals
  agrees_with_validator(R"({"type":"string","format":"regex"})", {R"("a+")", R"("a{3,2}")", R"("[")", R"(1)"});
}

BOOST_AUTO_TEST_CASE(format_uri_template_is_rfc_6570) {
  auto m = schema_matcher(R"({"type":"string","format":"uri-template"})");
  for (const char* good : {"http://example.com/dictionary/{term:1}/{term}", "/search{?q,lang}", "{+path}/here",
                           "{/list*}", "{#x,hello,y}", "plain", "", "%20{var.name:30}"})
    BOOST_TEST(accepts(*m, json_string(good)), good);
  for (const char* bad : {"http://example.com/dictionary/{term:1}/{term", "{}", "{a b}", "{x:0}", "{x:10000}",
                          "a b", "{?}", "100%", "<x>"})
    BOOST_TEST(!accepts(*m, json_string(bad)), bad);
}

BOOST_AUTO_TEST_SUITE_END()
