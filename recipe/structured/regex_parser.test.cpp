// JSON Schema patterns with anchors anywhere (`^$|^[a-z]+$`, `(^a|b$)`, `(^|,)x(,|$)`): the
// compiled search language and the whole-string language agree with std::regex (ECMAScript,
// the dialect JSON Schema names) on every string up to 5 characters over the patterns' alphabet.
#include "recipe/structured/byte_automaton.hpp"
#include "recipe/structured/compile_error.hpp"
#include "recipe/structured/regex_parser.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <regex>
#include <string>
#include <vector>

using namespace deepinfer::recipe::so;

namespace {

/// Every string over `alphabet` of at most `n` characters.
std::vector<std::string> strings(const std::string& alphabet, std::size_t n) {
  std::vector<std::string> out{""};
  for (std::size_t from = 0, len = 1; len <= n; ++len) {
    const std::size_t to = out.size();
    for (std::size_t i = from; i < to; ++i)
      for (char c : alphabet)
        out.push_back(out[i] + c);
    from = to;
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(structured_regex_parser)

BOOST_AUTO_TEST_CASE(anchors_anywhere_agree_with_ecmascript_search_and_whole_match) {
  const std::vector<std::string> patterns = {
    "^$|^[ab]+$", "(^a|b$)", "^(ab|c)$", "(^a)|(b$)", "a^b", "a$b", "^^a", "a$$", "(^a)*b", "(a|^)b", "b(a|$)",
    "^(a$|b)", "(^|,)ab(,|$)", "a(^)?b", "^a?$", "($)", "(^)", "^", "$", "(^a|^b)+c", "(a$)?", "((^a)|b)(c|(d$))",
    "^a|b", "a|b$", "(^ab|ba$){2}", "(^)*a($)*", "(^a|b)(a$|b)", "^(a|b)*c$", "c|^$", "(?:^|a)(?:b|$)", "x*^y",
    "y$x*", "^(?:a|(b$))+", "ab", "^ab", "ab$", "^ab$", "(^a|b)*c", "^(a|b$)*", "(a|^b)+$", "$^", "(a|$)(^|b)",
    "(a$|^b)*", "(^a|b)*(c$|d)*",
  };
  // Two from real schemas (MaskBench), over their own characters: a path's segments, a version.
  const std::vector<std::string> found_in_schemas = {"^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$",
                                                     "^v?\\d+(((\\.\\d+)?\\.\\d+)?\\.\\d+)?|^dev-"};
  const auto inputs = strings("abcd,xy", 4), real_inputs = strings("a./1v-d", 5);
  budget b{std::chrono::seconds(30), 1u << 22};
  auto all = patterns;
  all.insert(all.end(), found_in_schemas.begin(), found_in_schemas.end());
  for (const auto& p : all) {
    const std::regex reference(p, std::regex::ECMAScript);
    const auto parsed = parse_regex(p, spelling::raw);
    const auto search = byte_dfa::of(search_regex(p, spelling::raw), b);
    const auto whole = byte_dfa::of(parsed.full_match(), b);
    int found = 0, differ = 0;
    const bool real = std::find(found_in_schemas.begin(), found_in_schemas.end(), p) != found_in_schemas.end();
    for (const auto& s : real ? real_inputs : inputs) {
      const bool want = std::regex_search(s, reference), want_whole = std::regex_match(s, reference);
      found += want;
      if (search.matches(s) != want || whole.matches(s) != want_whole) {
        if (++differ <= 3)
          BOOST_ERROR("/" << p << "/ on \"" << s << "\": search " << search.matches(s) << " (std::regex " << want
                          << "), whole " << whole.matches(s) << " (" << want_whole << ")");
      }
    }
    BOOST_TEST(differ == 0, "/" << p << "/: " << differ << " strings differ, " << found << " found");
  }
}

BOOST_AUTO_TEST_CASE(lookaheads_opening_a_pattern_agree_with_ecmascript) {
  // What the compiler builds: the rest's automaton, intersected with each (?=...) and stripped
  // of each (?!...), each anchored at the start.
  const std::vector<std::pair<std::string, std::string>> cases = {
    {"^(?!ab)[a-d]*$", "abcd"}, {"^(?=a)(?!ab)", "abcd"}, {"^(?=[^,]+$)(?!b+$).+$", "ab,"},
    {"^(?!^a|b)c*", "abc"}, {"^(?![ab][ab])", "abc"}, {"^(?=(a|b)c)(?!ac)..", "abc"}, {"^(?!x)", "xa"},
    {"^(?=.*y)(?=.*x)", "xya"}, {"^(?![)(])a*", "a()"}, {"^(?=a$|b)(?!b$)", "ab"},
    {"^(?!org\\.b)([a-z][a-z\\d]*\\.)*[a-z][a-z\\d]*$", "org.b1"},
    // A line with no X: the lookahead inside the repetition (MaskBench: ^((?!mode)(?!Mode).)*$).
    {"^((?!ab).)*$", "abc"}, {"^(?:(?!ab)(?!ba).)+$", "abc"}, {"^((?!a|cb).)*$", "abc"}, {"^((?!(a|A)(b|B)).)*$", "aAbB"},
  };
  budget b{std::chrono::seconds(30), 1u << 22};
  auto of = [&](const std::string& p) { return byte_dfa::of(search_regex(p, spelling::raw), b); };
  for (const auto& [p, alphabet] : cases) {
    const auto split = split_leading_lookaheads(p);
    BOOST_TEST_REQUIRE(split.has_value(), p);
    BOOST_CHECK_THROW(parse_regex(p, spelling::raw), compile_error);  // the parser itself still refuses them
    byte_dfa d = of(split->rest);
    for (const auto& m : split->must)
      d = byte_dfa::intersect(d, of(m), b);
    for (const auto& m : split->must_not)
      d = byte_dfa::minus(d, of(m), b);
    const std::regex reference(p, std::regex::ECMAScript);
    int differ = 0, found = 0;
    for (const auto& s : strings(alphabet, alphabet.size() > 4 ? 5 : 6)) {
      const bool want = std::regex_search(s, reference);
      found += want;
      if (d.matches(s) != want && ++differ <= 3)
        BOOST_ERROR("/" << p << "/ on \"" << s << "\": ours " << d.matches(s) << ", std::regex " << want);
    }
    BOOST_TEST(differ == 0, "/" << p << "/: " << differ << " differ, " << found << " found");
  }
  BOOST_TEST(!split_leading_lookaheads("(?!a)b").has_value());  // not at the start: unsupported
  BOOST_TEST(!split_leading_lookaheads("^a(?!b)").has_value());
  BOOST_TEST(!split_leading_lookaheads("^((?!a*).)*$").has_value());  // X matches the empty string
  BOOST_TEST(!split_leading_lookaheads("^((?!a).)*b$").has_value());  // not the whole pattern
}

BOOST_AUTO_TEST_CASE(an_anchor_inside_a_long_repetition_is_refused) {
  BOOST_CHECK_THROW(parse_regex("(^a){20}", spelling::raw), compile_error);
  BOOST_CHECK_NO_THROW(parse_regex("(^a|b){3,5}", spelling::raw));
  BOOST_CHECK_NO_THROW(parse_regex("(ab){200}", spelling::raw));
}

BOOST_AUTO_TEST_SUITE_END()
