// Numbers in JSON Schema constraints: bounds exact as written (integers, decimals, int32) and
// multipleOf, checked by brute force against scaled integers (split from json_schema.test.cpp).
#include "recipe/structured/test_support.hpp"

#include "recipe/structured/json_schema_impl.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::so::test::accepts;
using deepinfer::recipe::so::test::agrees_with_validator;
using deepinfer::recipe::so::test::schema_matcher;

BOOST_AUTO_TEST_SUITE(structured_json_numbers)

BOOST_AUTO_TEST_CASE(number_bounds_are_exact) {
  auto n = schema_matcher(R"({"type":"number","exclusiveMinimum":-2,"maximum":10})");
  for (auto ok : {"-1.5", "0", "10", "10.0", "9.99", "-1.999"})
    BOOST_TEST(accepts(*n, ok), ok);
  for (auto bad : {"-2", "-2.0", "10.01", "11", "-3"})
    BOOST_TEST(!accepts(*n, bad), bad);
  auto i = schema_matcher(R"({"type":"integer","minimum":-120,"maximum":3400})");
  for (auto ok : {"-120", "-7", "0", "99", "3400", "1000"})
    BOOST_TEST(accepts(*i, ok), ok);
  for (auto bad : {"-121", "3401", "10000", "01"})
    BOOST_TEST(!accepts(*i, bad), bad);
}

// Bounds with decimals are exact as written (0.1 is not the double nearest it): every number
// of up to 4 decimals in [-6, 6], in several spellings, against every pair of bounds from a set,
// each inclusive or not, compared as scaled integers.
BOOST_AUTO_TEST_CASE(decimal_bounds_are_exact_as_written) {
  using json_lex::decimal;
  auto scaled = [](const std::string& t) {  // t has at most 4 decimals, no exponent
    const bool neg = t[0] == '-';
    const auto body = t.substr(neg ? 1 : 0);
    const auto dot = body.find('.');
    std::string whole = body.substr(0, dot), frac = dot == std::string::npos ? "" : body.substr(dot + 1);
    frac.resize(4, '0');
    const long v = std::stol(whole) * 10000 + std::stol(frac);
    return neg ? -v : v;
  };
  std::vector<std::string> numbers;
  for (long k = -60000; k <= 60000; k += 137) {
    const long a = std::labs(k);
    const std::string sign = k < 0 ? "-" : "";
    auto frac = std::to_string(a % 10000);
    frac.insert(0, 4 - frac.size(), '0');
    numbers.push_back(sign + std::to_string(a / 10000) + "." + frac);
    if (a % 10000 == 0)
      numbers.push_back(sign + std::to_string(a / 10000));
  }
  for (const char* t : {"0", "-0", "0.0", "-0.0", "0.1", "0.10", "-0.1", "0.05", "1.5", "1.50", "-1.5", "2.25", "-2.2500",
                        "0.0001", "-0.0001", "3", "-3", "0.3333", "5.9999", "-5.9999"})
    numbers.emplace_back(t);
  const std::vector<std::string> bounds{"-2.25", "-1", "-0.1", "0", "0.05", "0.1", "1.5", "3", "1e-1", "2.5E0", "-25e-1"};
  auto b = budget::unbounded();
  std::vector<std::pair<std::string, byte_dfa>> sides;
  for (const auto& text : bounds)
    for (bool above : {true, false})
      for (bool excl : {false, true}) {
        const auto d = decimal::parse(text);
        BOOST_TEST_REQUIRE(d.has_value(), text);
        sides.emplace_back(std::string(above ? ">" : "<") + (excl ? "" : "=") + text,
                           byte_dfa::of(json_lex::number_beyond(*d, above, excl), b));
      }
  auto value_of = [](const std::string& text) {  // the bound as a scaled integer
    const auto d = *decimal::parse(text);
    std::string frac = d.frac;
    frac.resize(4, '0');
    const long v = std::stol(d.whole) * 10000 + std::stol(frac);
    return d.negative ? -v : v;
  };
  for (const auto& [name, dfa] : sides) {
    const bool above = name[0] == '>', excl = name[1] != '=';
    const long bound = value_of(name.substr(excl ? 1 : 2));
    for (const auto& t : numbers) {
      const long v = scaled(t);
      const bool want = above ? (excl ? v > bound : v >= bound) : (excl ? v < bound : v <= bound);
      std::int32_t q = 0;
      for (char c : t)
        if (q >= 0)
          q = dfa.step(q, static_cast<std::uint8_t>(c));
      const bool got = q >= 0 && dfa.is_final(q);
      // `-0` is 0, but a spelling with the sign is not required: "above 0" may refuse it.
      if (got != want && !(want && !got && t[0] == '-' && v == 0))
        BOOST_ERROR(name << " " << t << ": got " << got);
    }
  }
  BOOST_TEST(!decimal::parse("1.2.3").has_value());
  BOOST_TEST(!decimal::parse("e5").has_value());
  BOOST_TEST(decimal::parse("-0.000").value().negative == false);
  BOOST_TEST(decimal::parse("12.5e-3").value().frac == "0125");
  // Through the compiler: a range with decimal bounds.
  auto m = schema_matcher(R"({"type":"number","minimum":0.1,"exclusiveMaximum":99.95})");
  for (auto ok : {"0.1", "0.10", "0.11", "1", "99.9499", "50.5"})
    BOOST_TEST(accepts(*m, ok), ok);
  for (auto bad : {"0.09999", "0", "-1", "99.95", "99.950", "100", "0.0999"})
    BOOST_TEST(!accepts(*m, bad), bad);
  auto i32 = schema_matcher(R"({"type":"integer","format":"int32"})");
  BOOST_TEST(accepts(*i32, "2147483647"));
  BOOST_TEST(!accepts(*i32, "2147483648"));
  BOOST_TEST(accepts(*i32, "-2147483648"));
}

// multipleOf is exact: a number of up to 4 decimals in several spellings passes the automaton
// exactly when, scaled to an integer, it divides by the scaled multiple.
BOOST_AUTO_TEST_CASE(multiple_of_is_exact) {
  using json_lex::decimal;
  auto b = budget::unbounded();
  auto scaled = [](const decimal& d) {
    std::string frac = d.frac;
    frac.resize(4, '0');
    const long v = std::stol(d.whole) * 10000 + std::stol(frac);
    return d.negative ? -v : v;
  };
  std::vector<std::string> numbers;
  for (long k = -30000; k <= 30000; k += 7) {
    const long a = std::labs(k);
    auto frac = std::to_string(a % 10000);
    frac.insert(0, 4 - frac.size(), '0');
    const std::string sign = k < 0 ? "-" : "";
    numbers.push_back(sign + std::to_string(a / 10000) + "." + frac);
    std::string trimmed = frac;
    while (!trimmed.empty() && trimmed.back() == '0')
      trimmed.pop_back();
    numbers.push_back(sign + std::to_string(a / 10000) + (trimmed.empty() ? "" : "." + trimmed));
  }
  for (const char* m : {"1", "2", "7", "10", "0.5", "0.25", "0.01", "2.5", "0.003", "1.5e-2"}) {
    const auto dm = decimal::parse(m);
    BOOST_TEST_REQUIRE(dm.has_value());
    const long step = scaled(*dm);
    const auto dfa = detail::multiple_of_dfa(*dm, b);
    for (const auto& t : numbers) {
      std::int32_t q = 0;
      for (char c : t)
        if (q >= 0)
          q = dfa.step(q, static_cast<std::uint8_t>(c));
      const bool got = q >= 0 && dfa.is_final(q);
      if (got != (scaled(*decimal::parse(t)) % step == 0))
        BOOST_ERROR("multipleOf " << m << ": " << t << " got " << got);
    }
  }
  auto i = schema_matcher(R"({"type":"integer","multipleOf":3,"minimum":-10,"maximum":20})");
  for (auto ok : {"0", "3", "-9", "18"})
    BOOST_TEST(accepts(*i, ok), ok);
  for (auto bad : {"4", "21", "-12", "3.0"})
    BOOST_TEST(!accepts(*i, bad), bad);
  auto cents = schema_matcher(R"({"type":"number","multipleOf":0.01,"exclusiveMinimum":0})");
  for (auto ok : {"1.23", "0.01", "5", "1.230"})
    BOOST_TEST(accepts(*cents, ok), ok);
  for (auto bad : {"1.234", "0", "-1.2", "1e2"})
    BOOST_TEST(!accepts(*cents, bad), bad);
  auto both = schema_matcher(R"({"allOf":[{"type":"integer","multipleOf":4},{"multipleOf":6}]})");
  BOOST_TEST(accepts(*both, "24"));
  BOOST_TEST(!accepts(*both, "12.5"));
  BOOST_TEST(!accepts(*both, "8"));
  BOOST_TEST(!accepts(*both, "18"));
  auto listed = schema_matcher(R"({"enum":[1,2,3,4,6,1.5],"multipleOf":1.5})");
  BOOST_TEST(accepts(*listed, "3"));
  BOOST_TEST(accepts(*listed, "1.5"));
  BOOST_TEST(!accepts(*listed, "2"));
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  for (const char* bad : {R"({"multipleOf":0})", R"({"multipleOf":-2})", R"({"multipleOf":1234567})"})
    BOOST_TEST(!c.compile({constraint_kind::json_schema, bad}).has_value(), bad);
}

// Bounds past 2^53 (int64's limits, a double's largest) are exact as written, for integers too
// (they were a 400): the compiled automaton and the validator agree around the bound.
BOOST_AUTO_TEST_CASE(bounds_beyond_a_doubles_integers_are_exact) {
  const std::string i64 = R"({"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807})";
  auto m = schema_matcher(i64);
  BOOST_TEST(accepts(*m, "9223372036854775807"));
  BOOST_TEST(!accepts(*m, "9223372036854775808"));
  BOOST_TEST(accepts(*m, "-9223372036854775808"));
  BOOST_TEST(!accepts(*m, "-9223372036854775809"));
  BOOST_TEST(!accepts(*m, "1.5"));
  agrees_with_validator(i64, {"0", "9223372036854775806", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
                              "12345678901234567890", "-1"});
  // (Instances a double holds exactly: the validator reads values as parsed JSON.)
  agrees_with_validator(R"({"type":"number","exclusiveMaximum":1.79769e+308,"minimum":2e16})",
                        {"20000000000000000", "19999999999999999", "20000000000000001", "1", "-20000000000000000"});
  agrees_with_validator(R"({"type":"integer","exclusiveMinimum":18446744073709551614})",
                        {"18446744073709551614", "18446744073709551615", "0", "-18446744073709551615"});
  // A 309-digit bound is an automaton of a few hundred states.
  auto huge = schema_matcher(R"({"type":"integer","maximum":1.79769e+308})");
  BOOST_TEST(accepts(*huge, "179769" + std::string(303, '0')));
  BOOST_TEST(!accepts(*huge, "179769" + std::string(302, '0') + "1"));
}

BOOST_AUTO_TEST_SUITE_END()
