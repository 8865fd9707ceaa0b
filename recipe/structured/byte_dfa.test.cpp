#include "recipe/structured/byte_automaton.hpp"
#include "recipe/structured/json_lexemes.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <random>
#include <string>

using namespace deepinfer::recipe::so;

namespace {
// Walks `d` over `s`: the state after it (-1: dead).
std::int32_t run(const byte_dfa& d, const std::string& s) {
  std::int32_t q = d.empty() ? -1 : 0;
  for (char c : s) {
    if (q < 0)
      return -1;
    q = d.step(q, static_cast<std::uint8_t>(c));
  }
  return q;
}
} // namespace

BOOST_AUTO_TEST_SUITE(structured_byte_dfa)

// A counted string is built directly (copies of the character DFA, distances computed, no
// finish); the same language through the regex path (subset construction, finish) must agree
// on every prefix: alive or not, final or not, and the distance to the end.
BOOST_AUTO_TEST_CASE(counted_strings_agree_with_the_regex_path_on_every_prefix) {
  budget b{std::chrono::seconds(30), 1u << 22};
  const auto unit = byte_dfa::of(json_lex::string_char(), b);
  const std::vector<std::string> pieces{"a", "\"", "\\", "n", "u", "0", "\xC3\xA9", "\xC3", "\xE2\x82\xAC", " ", "\\u00e9"};
  std::mt19937 rng{7};
  for (auto [min, max] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{
           {0, 0}, {0, 1}, {1, 1}, {0, 3}, {2, 5}, {3, rx::unbounded}, {0, rx::unbounded}, {4, 4}, {5, 2}})
  for (std::uint32_t ws : {rx::unbounded, 0u, 1u, 2u}) {  // the leading whitespace, bounded or not
    const auto direct = byte_dfa::counted(unit, '"', '"', min, max, b, ws);
    const auto regex = byte_dfa::of(json_lex::lead(json_lex::string_len(min, max), ws), b);
    BOOST_TEST_REQUIRE(direct.empty() == regex.empty());
    if (!direct.empty()) {
      BOOST_TEST(byte_dfa::minus(direct, regex, b).empty(), min << ".." << max << " ws " << ws);
      BOOST_TEST(byte_dfa::minus(regex, direct, b).empty(), min << ".." << max << " ws " << ws);
    }
    BOOST_TEST_REQUIRE(direct.empty() == regex.empty());
    if (direct.empty())
      continue;
    BOOST_TEST(direct.shortest_from(0) == regex.shortest_from(0));
    for (int trial = 0; trial < 400; ++trial) {
      std::string s = trial % 3 == 0 ? " \"" : trial % 3 == 1 ? "\n\t \"" : "\"";
      const int len = static_cast<int>(rng() % 9);
      for (int i = 0; i < len; ++i)
        s += pieces[rng() % pieces.size()];
      if (trial % 2 == 0)
        s += "\"";
      for (std::size_t cut = 0; cut <= s.size(); ++cut) {
        const auto p = s.substr(0, cut);
        const auto qd = run(direct, p), qr = run(regex, p);
        BOOST_TEST_REQUIRE((qd >= 0) == (qr >= 0), "min " << min << " max " << max << " prefix '" << p << "'");
        if (qd < 0)
          break;
        BOOST_TEST_REQUIRE(direct.is_final(qd) == regex.is_final(qr), "prefix '" << p << "'");
        BOOST_TEST_REQUIRE(direct.dist(qd) == regex.dist(qr), "min " << min << " max " << max << " prefix '" << p << "'");
      }
    }
  }
}

// Keys and punctuation are built directly; the regex path must give the same language and the
// same distances on every prefix (whitespace in the gaps, inside a key, and leading).
BOOST_AUTO_TEST_CASE(spaced_literals_agree_with_the_regex_path) {
  budget b{std::chrono::seconds(30), 1u << 22};
  const std::vector<std::vector<std::string>> cases{
      {"{"}, {"null"}, {"\"a\"", ":"}, {"\"my key\"", ":"}, {"\"\\u00e9t\\\"e\"", ":"}, {"\"\xC3\xA9\"", ":"},
      {"[1,2]"}, {"\"aaa\"", ":", "x"}};
  for (const auto& pieces : cases) {
    const auto direct = byte_dfa::spaced_literal(pieces);
    BOOST_TEST_REQUIRE(direct.has_value());
    std::vector<rx> parts;
    for (auto& p : pieces)
      parts.push_back(json_ws()), parts.push_back(rx::lit(p));
    const auto regex = byte_dfa::of(rx::seq(std::move(parts)), b);
    BOOST_TEST(byte_dfa::minus(*direct, regex, b).empty());
    BOOST_TEST(byte_dfa::minus(regex, *direct, b).empty());
    std::string text = " \n";
    for (auto& p : pieces)
      text += p + " \t";
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
      const auto p = text.substr(0, cut);
      const auto qd = run(*direct, p), qr = run(regex, p);
      BOOST_TEST_REQUIRE((qd >= 0) == (qr >= 0), "prefix '" << p << "'");
      if (qd < 0)
        break;
      BOOST_TEST_REQUIRE(direct->is_final(qd) == regex.is_final(qr), "prefix '" << p << "'");
      BOOST_TEST_REQUIRE(direct->dist(qd) == regex.dist(qr), "prefix '" << p << "'");
    }
  }
  BOOST_TEST(!byte_dfa::spaced_literal(std::vector<std::string>{" a"}).has_value());
  BOOST_TEST(!byte_dfa::spaced_literal(std::vector<std::string>{}).has_value());
}

// Literals with a bounded run of whitespace in each gap (the server's JSON default, or none) are
// built directly too; the regex path with `ws{0,n}` must agree on the language and on every
// prefix's distance.
BOOST_AUTO_TEST_CASE(spaced_literals_with_bounded_gaps_agree_with_the_regex_path) {
  budget b{std::chrono::seconds(30), 1u << 22};
  const std::vector<std::vector<std::string>> cases{{"{"}, {"\"a b\"", ":"}, {"\"aaa\"", ":", "x"}, {"[1,2]"}};
  for (std::uint32_t n : {0u, 1u, 3u}) {
    for (const auto& pieces : cases) {
      const auto direct = byte_dfa::spaced_literal(pieces, n);
      BOOST_TEST_REQUIRE(direct.has_value());
      std::vector<rx> parts;
      for (auto& p : pieces)
        parts.push_back(json_ws(n)), parts.push_back(rx::lit(p));
      const auto regex = byte_dfa::of(rx::seq(std::move(parts)), b);
      BOOST_TEST(byte_dfa::minus(*direct, regex, b).empty(), "n " << n << " " << pieces[0]);
      BOOST_TEST(byte_dfa::minus(regex, *direct, b).empty(), "n " << n << " " << pieces[0]);
      for (std::uint32_t gap : {0u, n, n + 1}) {
        std::string text = std::string(gap, '\n');
        for (auto& p : pieces)
          text += p + std::string(gap, ' ');
        for (std::size_t cut = 0; cut <= text.size(); ++cut) {
          const auto p = text.substr(0, cut);
          const auto qd = run(*direct, p), qr = run(regex, p);
          BOOST_TEST_REQUIRE((qd >= 0) == (qr >= 0), "n " << n << " prefix '" << p << "'");
          if (qd < 0)
            break;
          BOOST_TEST_REQUIRE(direct->is_final(qd) == regex.is_final(qr), "prefix '" << p << "'");
          BOOST_TEST_REQUIRE(direct->dist(qd) == regex.dist(qr), "prefix '" << p << "'");
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
