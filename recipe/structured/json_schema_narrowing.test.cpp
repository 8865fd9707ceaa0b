// Narrowing: oneOf whose branches may overlap (each branch narrowed to the part no other branch
// matches as written), `not`, and if / then / else. Every accepted instance below is valid by the
// JSON Schema validator, and random outputs of each compiled schema are all valid instances.

#include "recipe/structured/test_support.hpp"

#include "recipe/structured/json_validate.hpp"

#include <boost/test/unit_test.hpp>

#include <regex>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::so::test::accepts;
using deepinfer::recipe::so::test::schema_matcher;

namespace {

struct one_of_case {
  const char* schema;
  std::vector<std::pair<const char*, bool>> instances;  // text, accepted
};

void check(const std::vector<one_of_case>& cases) {
  std::mt19937 rng{11};
  for (const auto& [schema, instances] : cases) {
    auto m = schema_matcher(schema);
    auto root = nlohmann::ordered_json::parse(schema);
    auto b = budget::unbounded();
    json_validator valid{root, b};
    for (const auto& [text, ok] : instances) {
      BOOST_TEST(accepts(*m, text) == ok, schema << " " << text);
      if (ok)  // an accepted instance is valid; a rejected one may be valid (a narrowed branch)
        BOOST_TEST(valid.valid(nlohmann::ordered_json::parse(text), root), text);
    }
    const auto least = m->shortest_completion_length(m->start());
    for (int run = 0; run < 40; ++run) {
      const auto out = deepinfer::recipe::so::test::random_output(*m, rng, least + 1 + run % 20);
      BOOST_TEST_REQUIRE(out.has_value(), schema);
      static const std::regex long_number{"[0-9]{16}"};
      if (std::regex_search(*out, long_number))
        continue;  // parsed into a double, the number is not the one written: the validator cannot judge it
      BOOST_TEST(valid.valid(nlohmann::ordered_json::parse(*out), root), schema << " accepted " << *out);
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(structured_one_of)

// A key one branch requires and the other does not is forbidden in the other.
BOOST_AUTO_TEST_CASE(branches_apart_by_required_keys) {
  check({
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
          "oneOf":[{"required":["a"]},{"required":["b"]}]})",
       {{R"({"a":1})", true}, {R"({"b":2})", true}, {R"({"a":1,"b":2})", false}, {"{}", false}, {R"({"a":1,"c":3})", true}}},
      {R"({"oneOf":[{"type":"object","required":["a","c"]},{"type":"object","required":["a","b"]}]})",
       {{R"({"a":1,"c":1})", true}, {R"({"a":1,"b":2})", true}, {R"({"a":1,"b":2,"c":3})", false}, {R"({"b":2})", false}}},
      {R"({"oneOf":[{"required":["ssn"]},{"required":["ein"]},{"required":["itin"]}],"type":"object",
          "properties":{"name":{"type":"string"}},"required":["name"]})",
       {{R"({"name":"x","ein":"1"})", true}, {R"({"name":"x","ssn":"1","ein":"2"})", false}, {R"({"name":"x"})", false}}},
  });
}

// A branch every value of which another branch accepts is dropped; the wider one keeps what
// only it matches: the complement of a bound, of a count, of listed values, of a key.
BOOST_AUTO_TEST_CASE(a_branch_inside_another_leaves_the_other_its_own_part) {
  check({
      {R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]})",
       {{R"("abcd")", true}, {R"("ab")", false}, {"1", false}}},
      {R"({"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["a","b"]}]})",
       {{R"({"a":1})", true}, {R"({"a":1,"b":2})", false}, {R"({"b":2})", false}}},
      {R"({"oneOf":[{"maximum":2},{"maximum":5}]})",  // untyped: other types match both
       {{"4", true}, {"2.5", true}, {"5", true}, {"2", false}, {"1", false}, {R"("x")", false}, {"null", false}}},
      {R"({"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]})",
       {{"-3", true}, {"3", false}}},
      {R"({"oneOf":[{"enum":["a","b","c"]},{"enum":["c","d"]}]})",
       {{R"("a")", true}, {R"("d")", true}, {R"("c")", false}}},
      {R"({"oneOf":[{"type":"array","maxItems":2},{"type":"array","items":{"type":"integer"}}]})",
       {{R"([1,2,3])", true}, {R"([1])", false}, {R"([])", false}}},
      {R"({"type":"object","properties":{"kind":{"enum":["a","b","c"]}},"required":["kind"],
          "oneOf":[{"properties":{"kind":{"enum":["a","b"]}}},{"properties":{"kind":{"enum":["b","c"]}}}]})",
       {{R"({"kind":"a"})", true}, {R"({"kind":"c"})", true}, {R"({"kind":"b"})", false}}},
  });
}

// Strings: patterns whose languages share nothing are apart as they are; overlapping ones
// (unanchored searches, a pattern inside `type: string`, a hostname that is an IPv4 address)
// leave each branch the strings the others' patterns and formats reject, in every spelling.
BOOST_AUTO_TEST_CASE(strings_apart_by_their_patterns_and_formats) {
  check({
      {R"({"oneOf":[{"type":"string","pattern":"^https?://.+$"},{"type":"string","pattern":"^\\./.+$"}]})",
       {{R"("https://x")", true}, {R"("./a")", true}, {R"("a")", false}}},
      {R"({"type":"string","oneOf":[{"pattern":"customer"},{"pattern":"maker"}]})",
       {{R"("customer")", true}, {R"("maker 1")", true}, {R"("customermaker")", false}, {R"("x")", false},
        {R"("\u0063ustomer")", false}}},  // the same string spelled with an escape is still rejected
      {R"({"oneOf":[{"type":"string","pattern":"^[A-F0-9]{4}$"},{"type":"string"}]})",
       {{R"("xyz")", true}, {R"("AB12")", false}, {R"("\u0041B12")", false}, {R"("ABC")", true}}},
      {R"({"type":"string","oneOf":[{"format":"hostname"},{"format":"ipv4"}]})",
       {{R"("example.com")", true}, {R"("1.2.3.4")", false}, {R"("1.2.3")", true}}},
  });
}

// Closed objects whose optional keys differ: `{}` matches both, so each requires a key of its own.
BOOST_AUTO_TEST_CASE(closed_objects_require_a_key_the_other_forbids) {
  check({
      {R"({"type":"object","oneOf":[{"properties":{"set":{"type":"string"}},"additionalProperties":false},
          {"properties":{"replace":{"type":"string"}},"additionalProperties":false}]})",
       {{R"({"set":"x"})", true}, {R"({"replace":"y"})", true}, {"{}", false}, {R"({"set":"x","replace":"y"})", false}}},
  });
}

// A nested oneOf is narrowed for output, but the outer branches are kept apart from all it may
// match: {"a":1,"c":1} matches the nested branch as written (one key) and the second branch.
BOOST_AUTO_TEST_CASE(nested_one_of_is_checked_as_written) {
  check({
      {R"({"oneOf":[{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]},
          {"type":"object","required":["a","c"]}]})",
       {{R"({"a":1})", true}, {R"({"b":1})", true}, {R"({"a":1,"c":1})", false}, {R"({"a":1,"b":1})", false}}},
  });
}

// Branches with nothing of their own are refused, naming the overlap.
BOOST_AUTO_TEST_CASE(branches_with_nothing_of_their_own_are_refused) {
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  for (const char* schema : {R"({"oneOf":[{"type":"string"},{"type":"string"}]})",
                             R"({"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["a"]}]})"}) {
    auto r = c.compile({constraint_kind::json_schema, schema});
    BOOST_TEST_REQUIRE(!r.has_value(), schema);
    BOOST_TEST(r.error().find("oneOf branches 0 and 1 may both match") != std::string::npos, r.error());
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(structured_not_and_if)

// `not`: the rest of the schema narrowed to what the negated schema never matches: exact for
// types, keys, listed values, bounds and patterns.
BOOST_AUTO_TEST_CASE(not_removes_what_it_matches) {
  check({
      {R"({"not":{"type":"null"}})", {{"1", true}, {R"("x")", true}, {"null", false}}},
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"not":{"required":["b"]}})",
       {{R"({"a":1})", true}, {R"({"a":1,"b":2})", false}}},
      {R"({"type":"string","not":{"enum":["admin","root"]}})",
       {{R"("alice")", true}, {R"("root")", false}, {R"("root")", false}}},
      {R"({"enum":["a","b","c"],"not":{"const":"b"}})", {{R"("a")", true}, {R"("b")", false}}},
      {R"({"type":"integer","not":{"minimum":10}})", {{"9", true}, {"-4", true}, {"10", false}, {"11", false}}},
      {R"({"not":{"minimum":10}})", {{"9.5", true}, {"10", false}, {R"("x")", false}}},  // strings match {minimum}
      {R"({"type":"string","not":{"pattern":"^tmp_"}})", {{R"("data")", true}, {R"("tmp_1")", false}}},
      {R"({"type":"array","items":{"type":"integer"},"not":{"maxItems":1}})", {{"[1,2]", true}, {"[1]", false}, {"[]", false}}},
  });
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  auto none = c.compile({constraint_kind::json_schema, R"({"type":"string","not":{"type":"string"}})"});
  BOOST_TEST(!none.has_value());
}

// if / then / else: (if and then) or (else and what `if` never matches).
BOOST_AUTO_TEST_CASE(if_then_else_takes_either_side) {
  check({
      {R"({"type":"object","properties":{"kind":{"enum":["card","bank"]},"number":{"type":"string"},"iban":{"type":"string"}},
          "required":["kind"],"additionalProperties":false,
          "if":{"properties":{"kind":{"const":"card"}}},"then":{"required":["number"]},"else":{"required":["iban"]}})",
       {{R"({"kind":"card","number":"4"})", true}, {R"({"kind":"bank","iban":"DE"})", true},
        {R"({"kind":"card","iban":"DE"})", false}, {R"({"kind":"bank","number":"4"})", false}}},
      {R"({"type":"integer","if":{"minimum":100},"then":{"multipleOf":10}})",
       {{"7", true}, {"110", true}, {"105", false}}},
  });
}

BOOST_AUTO_TEST_SUITE_END()
