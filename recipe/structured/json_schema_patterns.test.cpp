// Object keys found by patterns, and string patterns anchored anywhere or opening with
// lookaheads (split from json_schema.test.cpp).
#include "recipe/structured/test_support.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::so::test::accepts;
using deepinfer::recipe::so::test::agrees_with_validator;
using deepinfer::recipe::so::test::schema_matcher;

BOOST_AUTO_TEST_SUITE(structured_json_schema)

BOOST_AUTO_TEST_CASE(pattern_properties_constrain_the_keys_their_patterns_find) {
  auto m = schema_matcher(R"({"type":"object","properties":{"id":{"type":"integer"}},
      "patternProperties":{"^x-":{"type":"string"},"^[0-9]+$":{"type":"boolean"}},"additionalProperties":false})");
  BOOST_TEST(accepts(*m, R"({"id":1,"x-a":"s","12":true})"));
  BOOST_TEST(accepts(*m, R"({"x-":"","x-b":"t"})"));
  BOOST_TEST(!accepts(*m, R"({"x-a":1})"));     // the pattern's schema
  BOOST_TEST(!accepts(*m, R"({"12":"s"})"));
  BOOST_TEST(!accepts(*m, R"({"y":"s"})"));     // found by no pattern, and additionalProperties false
  BOOST_TEST(!accepts(*m, R"({"a12":true})"));  // anchored pattern: not found
  // Unanchored: found anywhere in the key; the rest meets additionalProperties.
  auto u = schema_matcher(R"({"type":"object","patternProperties":{"_id":{"type":"integer"}},
      "additionalProperties":{"type":"string"}})");
  BOOST_TEST(accepts(*u, R"({"user_id":3,"name":"n"})"));
  BOOST_TEST(!accepts(*u, R"({"user_id":"3"})"));
  BOOST_TEST(!accepts(*u, R"({"name":3})"));
}

// A required key that only a pattern lets in (a translations object: "en" required, any of the
// listed languages allowed): its value takes the pattern's schema; it was "admits no value".
BOOST_AUTO_TEST_CASE(a_required_key_found_by_a_pattern_takes_its_schema) {
  const std::string translations = R"({"type":"object","required":["en"],"patternProperties":{"en|de|zh-cn":{"type":"string"}},
      "additionalProperties":false})";
  auto m = schema_matcher(translations);
  BOOST_TEST(accepts(*m, R"({"en":"hi"})"));
  BOOST_TEST(accepts(*m, R"({"en":"hi","de":"hallo"})"));
  BOOST_TEST(!accepts(*m, R"({"de":"hallo"})"));       // en is required
  BOOST_TEST(!accepts(*m, R"({"en":1})"));             // the pattern's schema
  BOOST_TEST(!accepts(*m, R"({"en":"a","en":"b"})"));  // written once, as its member
  BOOST_TEST(!accepts(*m, R"({"en":"a","fr":"b"})"));
  agrees_with_validator(translations, {R"({"en":"x"})", R"({"en":"x","zh-cn":"y"})", R"({})", R"({"de":"x"})", R"({"en":null})"});
  agrees_with_validator(R"({"type":"object","properties":{"d":{"$ref":"#/$defs/t"}},"required":["d"],"additionalProperties":false,
      "$defs":{"t":{"type":"object","required":["en"],"patternProperties":{"^[a-z]{2}$":{"type":"string"}},"additionalProperties":false}}})",
                        {R"({"d":{"en":"x"}})", R"({"d":{"en":"x","fr":"y"}})", R"({"d":{"fr":"y"}})", R"({"d":{}})"});
  // Two patterns that both find the required key: refused, as two patterns on one key are.
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  auto two = c.compile({constraint_kind::json_schema, R"({"type":"object","required":["en"],"patternProperties":{"^e":{},"n$":{}}})"});
  BOOST_TEST_REQUIRE(!two.has_value());
  BOOST_TEST(two.error().find("required key 'en'") != std::string::npos, two.error());
}

// Patterns anchored anywhere, or opening with lookaheads (a reserved prefix, a required shape):
// the compiled strings are exactly those the validator accepts.
BOOST_AUTO_TEST_CASE(patterns_with_inner_anchors_and_opening_lookaheads) {
  agrees_with_validator(R"J({"type":"string","pattern":"^(?!org\\.bukkit\\.)([a-z]+\\.)*[a-z]+$"})J",
                        {R"("org.example.plugin")", R"("org.bukkit.plugin")", R"("org.bukkit")", R"("a")", R"("Org.x")", R"("")"});
  agrees_with_validator(R"J({"type":"string","pattern":"^(?=[^=]+$)(?!\\s+$)(.|\\n)+$"})J",
                        {R"("a b")", R"("   ")", R"("a=b")", R"("")", R"("x\ny")", R"(" \n ")"});
  agrees_with_validator(R"J({"type":"string","pattern":"^((?!mode)(?!Mode).)*$"})J",
                        {R"("a node")", R"("the mode")", R"("Modem")", R"("")", R"("mod e")", R"("a\nb")"});
  agrees_with_validator(R"J({"type":"string","pattern":"^$|^[a-z]+$"})J", {R"("")", R"("abc")", R"("ab1")", R"(" a")"});
  agrees_with_validator(R"J({"type":"object","properties":{"v":{"type":"string","pattern":"(^|,)id(,|$)"}}})J",
                        {R"({"v":"id"})", R"({"v":"a,id"})", R"({"v":"id,b"})", R"({"v":"aid"})", R"({"v":"a,idb"})"});
}

BOOST_AUTO_TEST_SUITE_END()
