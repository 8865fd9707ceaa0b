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

// A declared property that a pattern also finds matches both schemas (it was a 400).
BOOST_AUTO_TEST_CASE(a_declared_property_a_pattern_finds_matches_both_schemas) {
  const std::string both = R"({"type":"object","properties":{"id":{"type":"integer"},"name":{"maxLength":3}},
      "patternProperties":{".*":{"type":["integer","string"]},"^n":{"minLength":1}},"required":["id"],
      "additionalProperties":false})";
  auto m = schema_matcher(both);
  BOOST_TEST(accepts(*m, R"({"id":1,"name":"abc","x":"y"})"));
  BOOST_TEST(!accepts(*m, R"({"id":1,"name":"abcd"})"));  // the declared maxLength
  BOOST_TEST(!accepts(*m, R"({"id":1,"name":""})"));      // ^n's minLength
  BOOST_TEST(!accepts(*m, R"({"id":1,"name":true})"));    // .*'s type
  BOOST_TEST(!accepts(*m, R"({"id":1,"x":null})"));       // an undeclared key: .*'s schema
  agrees_with_validator(both, {R"({"id":1})", R"({"id":"1"})", R"({"id":2,"name":"ab","n2":"z"})",
                               R"({"id":2,"n2":""})", R"({"id":2,"zz":[]})", R"({"name":"a"})"});
  // A pattern whose schema is false forbids the declared key it finds.
  auto banned = schema_matcher(R"({"type":"object","properties":{"tmp":{"type":"string"},"ok":{}},
      "patternProperties":{"^t":false}})");
  BOOST_TEST(accepts(*banned, R"({"ok":1})"));
  BOOST_TEST(!accepts(*banned, R"({"tmp":"x"})"));
}

// An allOf of a part with patterns and a part with properties (an OpenAPI object and its `x-`
// extensions): both parts hold on every key (it was a 400).
BOOST_AUTO_TEST_CASE(an_allof_joins_patterns_and_properties) {
  const std::string s = R"({"allOf":[{"type":"object","properties":{"name":{"type":"string"},"x-id":{"maxLength":3}},"required":["name"]},
      {"patternProperties":{"^x-":{"type":"string"},"^n":{"minLength":2}}},{"patternProperties":{"^x-":{"minLength":1}}}]})";
  auto m = schema_matcher(s);
  BOOST_TEST(accepts(*m, R"({"name":"ab","x-id":"abc","x-o":"s","other":5})"));
  BOOST_TEST(!accepts(*m, R"({"name":"a"})"));             // ^n's minLength on a declared key
  BOOST_TEST(!accepts(*m, R"({"name":"ab","x-id":"abcd"})"));
  BOOST_TEST(!accepts(*m, R"({"name":"ab","x-o":""})"));    // ^x- from both parts
  BOOST_TEST(!accepts(*m, R"({"name":"ab","x-o":1})"));
  agrees_with_validator(s, {R"({"name":"ab"})", R"({"name":"ab","x-id":""})", R"({"name":"ab","x-id":7})", R"({"x-a":"b"})",
                            R"({"name":"ab","nn":"a"})", R"({"name":"ab","nn":3})", R"({"name":"ab","zz":null})"});
  // A part with patterns beside one that closes its keys: still refused, and said so.
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  auto closed = c.compile({constraint_kind::json_schema, R"({"allOf":[{"properties":{"a":{}},"additionalProperties":false},
      {"patternProperties":{"^x":{"type":"string"}}}]})"});
  BOOST_TEST_REQUIRE(!closed.has_value());
  BOOST_TEST(closed.error().find("additionalProperties") != std::string::npos, closed.error());
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
  // Two patterns that both find the required key: its value matches both schemas.
  const std::string two = R"({"type":"object","required":["en"],"patternProperties":{"^e":{"type":"string"},"n$":{"maxLength":2}}})";
  agrees_with_validator(two, {R"({"en":"ab"})", R"({"en":"abc"})", R"({"en":1})", R"({})", R"({"en":"a","in":"xyz"})",
                              R"({"en":"a","in":5})", R"({"en":"a","ex":"xyz"})"});
}

// Keys that several patterns find match all their schemas; each pattern's other keys only its own.
BOOST_AUTO_TEST_CASE(keys_several_patterns_find_match_all_their_schemas) {
  const std::string s = R"({"type":"object","patternProperties":{"^x-":{"type":"string"},"_id$":{"minLength":2},
      "^x-tmp":false},"additionalProperties":{"type":"integer"}})";
  auto m = schema_matcher(s);
  BOOST_TEST(accepts(*m, R"({"x-a":"s","user_id":5,"x-user_id":"ab","n":1})"));
  BOOST_TEST(!accepts(*m, R"({"x-user_id":"a"})"));  // both: a string of 2 or more
  BOOST_TEST(!accepts(*m, R"({"x-user_id":12})"));
  BOOST_TEST(!accepts(*m, R"({"x-tmp1":"s"})"));     // one of them forbids it
  agrees_with_validator(s, {R"({"x-a":"s","user_id":5,"x-user_id":"ab","n":1})", R"({"x-user_id":"a"})", R"({"a_id":"x"})",
                            R"({"a_id":"xy"})", R"({"a_id":7})", R"({"x-tmp":1})", R"({"y":"s"})", R"({})"});
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
