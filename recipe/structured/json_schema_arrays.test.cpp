// Arrays: prefix items and counts, uniqueItems over a finite set of values.
#include "recipe/structured/test_support.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::so::test::accepts;
using deepinfer::recipe::so::test::agrees_with_validator;
using deepinfer::recipe::so::test::schema_matcher;

BOOST_AUTO_TEST_SUITE(structured_json_schema)

BOOST_AUTO_TEST_CASE(arrays_with_prefix_items_and_counts) {
  auto m = schema_matcher(R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":{"type":"boolean"},"minItems":1,"maxItems":3})");
  BOOST_TEST(accepts(*m, "[1]"));
  BOOST_TEST(accepts(*m, R"([1,"a",true])"));
  BOOST_TEST(!accepts(*m, "[]"));
  BOOST_TEST(!accepts(*m, R"([1,"a",true,false])"));
  BOOST_TEST(!accepts(*m, R"(["a"])"));
}

// uniqueItems over a finite set of items (enum, const, booleans, null, through $ref and unions):
// exact, an automaton over the sets of items written so far.
BOOST_AUTO_TEST_CASE(unique_items_over_a_finite_set_of_values) {
  const std::vector<std::pair<std::string, std::vector<const char*>>> cases{
      {R"({"type":"array","items":{"enum":["a","b","c"]},"uniqueItems":true})",
       {"[]", R"(["a"])", R"(["a","b"])", R"(["a","a"])", R"(["b","a","c"])", R"(["c","b","a","b"])", R"(["d"])"}},
      {R"({"type":"array","items":{"enum":["a","b","c"]},"uniqueItems":true,"minItems":2,"maxItems":2})",
       {"[]", R"(["a"])", R"(["a","b"])", R"(["b","b"])", R"(["a","b","c"])"}},
      {R"({"type":"array","items":{"type":"boolean"},"uniqueItems":true})",
       {"[]", "[true]", "[true,false]", "[false,true]", "[true,true]", "[false,true,false]"}},
      {R"({"type":"array","items":{"anyOf":[{"const":1},{"type":"null"},{"enum":["x",2]}]},"uniqueItems":true})",
       {"[1,null]", "[null,null]", R"([2,"x",1,null])", "[2,2]", "[3]"}},
      {R"({"$defs":{"c":{"enum":["r","g","b"]}},"type":"array","items":{"$ref":"#/$defs/c"},"uniqueItems":true,"minItems":1})",
       {"[]", R"(["g"])", R"(["g","g"])", R"(["b","g","r"])"}},
      // allOf: uniqueItems on one side, the items on the other; true beside false is still true.
      {R"({"allOf":[{"type":"array","items":{"enum":[1,2,3]}},{"uniqueItems":true}]})", {"[1,2]", "[1,1]", "[3,2,1]"}},
      {R"({"allOf":[{"type":"array","items":{"enum":[1,2]},"uniqueItems":true},{"uniqueItems":false}]})", {"[1,2]", "[2,2]"}},
      // More items asked for than there are distinct values: only the other type is left.
      {R"({"type":["array","null"],"items":{"enum":[1,2]},"uniqueItems":true,"minItems":3})", {"null", "[1,2]", "[1,2,1]"}},
      // The items' own keywords filter the values (the validator decides them).
      {R"({"type":"array","items":{"enum":["ab","a","abc"],"minLength":2},"uniqueItems":true})",
       {R"(["ab","abc"])", R"(["a"])", R"(["abc","abc"])"}},
      // Forty values, at most two of them: 821 sets.
      {R"({"type":"array","items":{"type":"integer","enum":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39]},"uniqueItems":true,"maxItems":2})",
       {"[0,39]", "[39,39]", "[7]", "[1,2,3]"}},
  };
  for (const auto& [schema, instances] : cases)
    agrees_with_validator(schema, instances);
  BOOST_TEST(!accepts(*schema_matcher(cases[0].first), R"(["a","a"])"));  // the comparison is not vacuous
  BOOST_TEST(accepts(*schema_matcher(cases[0].first), R"(["c","a","b"])"));

  auto& c = deepinfer::recipe::so::test::shared_compiler();
  for (auto [schema, word] : {std::pair{R"({"type":"array","items":{"type":"string"},"uniqueItems":true})", "any string"},
                              {R"({"type":"array","items":{"enum":[1,2]},"prefixItems":[{}],"uniqueItems":true})", "prefixItems"},
                              {R"({"type":"array","items":{"type":"integer","enum":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39]},"uniqueItems":true})", "lower maxItems"},
                              {R"({"type":"array","uniqueItems":"yes"})", "must be a boolean"}}) {
    auto r = c.compile({constraint_kind::json_schema, schema});
    BOOST_TEST_REQUIRE(!r.has_value(), schema);
    BOOST_TEST(r.error().find(word) != std::string::npos, r.error());
  }
}

BOOST_AUTO_TEST_SUITE_END()
