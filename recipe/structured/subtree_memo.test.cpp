#include "recipe/structured/json_lexemes.hpp"
#include "recipe/structured/lexer_class.hpp"
#include "recipe/structured/test_support.hpp"
#include "recipe/structured/token_bits.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <tuple>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::token_id;
using deepinfer::recipe::so::test::shared_compiler;

namespace {

// An object's key lexer: a declared key, or any other key (then `:`), as the schema compiler
// unites them (the declared ones are tracked inside the any-key part's string).
byte_dfa key_lexer(const std::vector<std::string>& declared, budget& b) {
  auto any = byte_dfa::of(json_lex::lead(rx::seq({json_lex::string_len(0, rx::unbounded), rx::lit(":")})), b);
  std::vector<byte_dfa> keys;
  for (const auto& k : declared)
    keys.push_back(byte_dfa::of(json_lex::lead(rx::lit("\"" + k + "\":")), b));
  std::vector<const byte_dfa*> ptrs;
  for (const auto& k : keys)
    ptrs.push_back(&k);
  auto extra = byte_dfa::minus(any, byte_dfa::unite(ptrs, b), b);
  ptrs.push_back(&extra);
  return byte_dfa::unite(ptrs, b);
}

std::int32_t after(const byte_dfa& d, std::string_view bytes) {
  std::int32_t q = 0;
  for (char c : bytes)
    q = d.step(q, static_cast<std::uint8_t>(c));
  return q;
}

// The class as token ids and, per group, its final state's lexer state and every suffix's
// token (what a mask reads from it).
struct flat_class {
  std::vector<token_id> tokens;
  std::vector<std::tuple<std::int32_t, std::vector<token_id>>> groups;
  friend bool operator==(const flat_class&, const flat_class&) = default;
};

flat_class flatten(const lexer_class& c, const lexer_view& view) {
  flat_class f;
  if (!c.dense.empty()) {
    f.tokens = token_ids(c.dense);
  } else {
    f.tokens = c.sparse;
  }
  for (const auto& g : c.groups) {
    std::vector<token_id> ids;
    for (std::uint32_t i = 0; i < g.suffixes.size(); ++i)
      ids.insert(ids.end(), g.suffixes.tokens_begin(i), g.suffixes.tokens_end(i));
    std::sort(ids.begin(), ids.end());
    f.groups.emplace_back(view.order[static_cast<std::size_t>(g.final_state)], std::move(ids));
  }
  return f;
}

} // namespace

BOOST_AUTO_TEST_SUITE(structured_subtree_memo)

BOOST_AUTO_TEST_CASE(classes_through_the_memo_equal_the_walked_classes) {
  const auto& v = shared_compiler().vocab();
  budget b{std::chrono::seconds(30), 1u << 22};
  // Three objects' key lexers, each inside a key the tokens may finish or extend: their views
  // differ (each tracks its own declared keys) and meet in the plain inside of a key after one
  // more byte, which is what the memo keeps.
  const auto a = key_lexer({"name", "namespace", "id"}, b);
  const auto c = key_lexer({"nation", "count"}, b);
  const auto e = key_lexer({"nab", "n", "value", "x"}, b);
  subtree_memo memo{64u << 20};
  for (int round = 0; round < 2; ++round)
    for (const auto* d : {&a, &c, &e})
      for (std::string_view at : {" \"na", "\"n", "\"", "\"nam"}) {
        const auto q = after(*d, at);
        BOOST_TEST_REQUIRE(q >= 0);
        const lexer_view view{*d, q, v.trie().max_depth()};
        const auto walked = lexer_class::make(*d, view, v, nullptr);
        const auto kept = lexer_class::make(*d, view, v, &memo);
        const auto fw = flatten(*walked, view);
        BOOST_TEST((fw == flatten(*kept, view)),
                   "lexer " << (d == &a ? 'a' : d == &c ? 'c' : 'e') << " after '" << at << "' round " << round);
        BOOST_TEST(fw.tokens.size() > 1000u);  // the inside of a key allows most tokens
        BOOST_TEST(!fw.groups.empty());         // and tokens that close it and go on
      }
  // The second round found entries (the first built them on each view's second sighting).
  bool build = false;
  const lexer_view inside{a, after(a, "\"nax"), static_cast<std::uint32_t>(v.trie().max_depth() - 1)};
  BOOST_TEST(memo.find(inside.signature, build) != nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
