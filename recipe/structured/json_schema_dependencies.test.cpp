// Objects: dependentRequired, `dependencies` and dependentSchemas, checked against the validator.
#include "recipe/structured/test_support.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::so::test::accepts;
using deepinfer::recipe::so::test::agrees_with_validator;
using deepinfer::recipe::so::test::schema_matcher;

BOOST_AUTO_TEST_SUITE(structured_json_schema)

// dependentRequired (and `dependencies` with arrays), in either order of the keys, checked
// instance by instance against the validator; what is not decided in order is refused.
BOOST_AUTO_TEST_CASE(dependent_required_in_either_order) {
  const std::vector<std::pair<std::string, std::vector<const char*>>> cases{
      {R"({"type":"object","properties":{"card":{"type":"string"},"zip":{"type":"string"},"cvv":{"type":"string"}},
          "dependentRequired":{"card":["cvv"],"cvv":["zip"]},"additionalProperties":false})",
       {"{}", R"({"card":"1"})", R"({"card":"1","cvv":"2"})", R"({"card":"1","zip":"3","cvv":"2"})", R"({"zip":"3"})",
        R"({"zip":"3","cvv":"2"})", R"({"cvv":"2"})"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["b"],
          "dependencies":{"b":["a"]},"additionalProperties":false})",
       {R"({"b":1})", R"({"a":1,"b":2})", R"({"a":1})"}},
      {R"({"allOf":[{"type":"object","properties":{"a":{},"b":{},"c":{}},"additionalProperties":false,
          "dependentRequired":{"a":["b"]}},{"dependentRequired":{"a":["c"]}}]})",
       {R"({"a":1,"b":2})", R"({"a":1,"b":2,"c":3})", R"({"b":2})"}},
  };
  for (const auto& [schema, instances] : cases)
    agrees_with_validator(schema, instances);
  BOOST_TEST(!accepts(*schema_matcher(cases[0].first), R"({"card":"1"})"));  // the comparison is not vacuous
  // An open object's dependency on a key it does not declare: if / then (r after a, the
  // members' order).
  agrees_with_validator(R"({"type":"object","properties":{"a":{}},"dependentRequired":{"a":["zz"]}})",
                        {"{}", R"({"a":1})", R"({"a":1,"zz":2})", R"({"zz":2})", R"({"b":1})"});
  agrees_with_validator(R"({"type":"object","dependencies":{"x":["y"]},"additionalProperties":{"type":"integer"}})",
                        {"{}", R"({"x":1})", R"({"x":1,"y":2})", R"({"y":2})", R"({"x":"s","y":2})"});
  BOOST_TEST(!accepts(*schema_matcher(R"({"type":"object","dependencies":{"x":["y"]}})"), R"({"x":1})"));
}

// Schema-valued dependencies (dependentSchemas, `dependencies` with a schema) are if / then: an
// object with the key also matches the schema; other objects and other types are untouched.
BOOST_AUTO_TEST_CASE(schema_valued_dependencies) {
  const std::vector<std::pair<std::string, std::vector<const char*>>> cases{
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"dependencies":{"a":{"required":["b"]},"b":["a"]}})",
       {"{}", R"({"a":1})", R"({"a":1,"b":"x"})", R"({"b":"x"})", R"({"a":1,"b":"x","c":null})"}},
      {R"({"properties":{"card":{}},"dependentSchemas":{"card":{"properties":{"zip":{"type":"string","maxLength":5}},"required":["zip"]}}})",
       {R"("text")", "3", "{}", R"({"card":1})", R"({"card":1,"zip":"123"})", R"({"card":1,"zip":"1234567"})",
        R"({"zip":"1234567"})"}},
      {R"({"type":"object","dependentSchemas":{"x":false},"properties":{"x":{},"y":{}}})",
       {"{}", R"({"x":1})", R"({"y":1})"}},
  };
  for (const auto& [schema, instances] : cases)
    agrees_with_validator(schema, instances);
  BOOST_TEST(!accepts(*schema_matcher(cases[1].first), R"({"card":1})"));  // the comparison is not vacuous
  BOOST_TEST(accepts(*schema_matcher(cases[1].first), R"("text")"));
}

BOOST_AUTO_TEST_SUITE_END()
