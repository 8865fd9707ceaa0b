#include "recipe/tokenizer/incremental_detokenizer.hpp"

#include "recipe/tokenizer/test_assets.hpp"
#include "recipe/tokenizer/test_corpus.hpp"
#include "recipe/tokenizer/utf8.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe;

namespace {

std::string stream(const std::shared_ptr<const tokenizer>& tok, std::span<const token_id> ids, bool check_each) {
  incremental_detokenizer d{tok};
  std::string out;
  for (const token_id id : ids) {
    const std::string piece = d.push(id);
    if (check_each)
      BOOST_REQUIRE(utf8::is_valid(piece));
    out += piece;
  }
  return out + d.flush();
}

// Single-byte tokens for every byte of `s`.
std::vector<token_id> byte_tokens(const tokenizer& tok, std::string_view s) {
  std::vector<token_id> ids;
  for (const char c : s)
    ids.push_back(tok.encode(std::string(1, c)).at(0));
  return ids;
}

} // namespace

BOOST_AUTO_TEST_SUITE(incremental_detokenizer_suite)

BOOST_AUTO_TEST_CASE(streaming_equals_whole_decode_on_generated_text) {
  auto tok = test::shared("tokenizer_v32.json");
  const std::string text = test::generated_text(200'000, 3);
  const auto ids = tok->encode(text);
  BOOST_TEST(stream(tok, ids, true) == text);
  BOOST_TEST(tok->decode(ids) == text);
}

BOOST_AUTO_TEST_CASE(every_split_point_of_a_sample_matches_decode_of_the_prefix) {
  auto tok = test::shared("tokenizer_v32.json");
  // Emoji with ZWJ, CJK, combining marks, astral code points: tokens end inside code points.
  const std::string text = "👨‍👩‍👧‍👦 中文日本語 é̃ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🏳️‍🌈 ok" + test::generated_text(3000, 11);
  const auto ids = tok->encode(text);
  const std::string whole = tok->decode(ids);
  BOOST_TEST(whole == text);
  for (std::size_t k = 0; k <= ids.size(); ++k) {
    const std::span<const token_id> head{ids.data(), k}, tail{ids.data() + k, ids.size() - k};
    // A stream stopped at k and flushed gives decode of the prefix ...
    BOOST_TEST(stream(tok, head, false) == tok->decode(head));
    // ... and one that goes on gives the whole text, whatever was held at k.
    incremental_detokenizer d{tok};
    std::string out;
    for (const token_id id : head)
      out += d.push(id);
    BOOST_TEST(d.pending() < 4u);
    BOOST_TEST(whole.compare(0, out.size(), out) == 0);
    for (const token_id id : tail)
      out += d.push(id);
    BOOST_TEST(out + d.flush() == whole);
  }
}

BOOST_AUTO_TEST_CASE(holds_an_incomplete_code_point_until_it_is_complete) {
  auto tok = test::shared("tokenizer_v32.json");
  const auto ids = byte_tokens(*tok, "😀a");
  BOOST_REQUIRE_EQUAL(ids.size(), 5u);
  incremental_detokenizer d{tok};
  BOOST_TEST(d.push(ids[0]).empty());
  BOOST_TEST(d.push(ids[1]).empty());
  BOOST_TEST(d.push(ids[2]).empty());
  BOOST_TEST(d.pending() == 3u);
  BOOST_TEST(d.push(ids[3]) == "😀");
  BOOST_TEST(d.push(ids[4]) == "a");
  BOOST_TEST(d.flush().empty());
}

BOOST_AUTO_TEST_CASE(invalid_bytes_become_replacement_characters_as_in_decode) {
  auto tok = test::shared("tokenizer_v32.json");
  for (const std::string& raw : {std::string{"\xE0" "A"}, std::string{"a\xF0\x9F"}, std::string{"\xC0\xAF" "b"},
                                std::string{"\xED\xA0\x80"}, std::string{"\x80\x80\xE4\xB8"}, std::string{"\xF4\x90\x80\x80"}}) {
    const auto ids = byte_tokens(*tok, raw);
    const std::string whole = tok->decode(ids);
    BOOST_TEST(utf8::is_valid(whole));
    BOOST_TEST(whole.find("\xEF\xBF\xBD") != std::string::npos);
    BOOST_TEST(stream(tok, ids, true) == whole);
  }
  // Maximal subparts, as Rust's from_utf8_lossy: E0 41 -> U+FFFD 'A'; F0 9F at the end -> one U+FFFD.
  BOOST_TEST(tok->decode(byte_tokens(*tok, "\xE0" "A")) == "\xEF\xBF\xBD" "A");
  BOOST_TEST(tok->decode(byte_tokens(*tok, "a\xF0\x9F")) == "a\xEF\xBF\xBD");
  BOOST_TEST(tok->decode(byte_tokens(*tok, "\xED\xA0\x80")) == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

BOOST_AUTO_TEST_CASE(added_tokens_stream_as_their_spelling) {
  auto tok = test::shared("tokenizer_v41.json");
  incremental_detokenizer d{tok};
  BOOST_TEST(d.push(*tok->special_id("<think>")) == "<think>");
  BOOST_TEST(d.push(*tok->special_id("｜DSML｜")) == "｜DSML｜");
  BOOST_TEST(d.push(999'999).empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tokenizer_arbitrary_bytes)

// Invalid UTF-8 is kept byte for byte by encode (the tokens' bytes concatenate to the input) and
// decodes with U+FFFD exactly as the incremental detokenizer streams it.
BOOST_AUTO_TEST_CASE(random_bytes_round_trip_through_token_bytes) {
  auto tok = test::shared("tokenizer_v32.json");
  test::rng r{99};
  for (int n = 0; n < 300; ++n) {
    std::string s;
    for (auto k = r.between(0, 200); k > 0; --k)
      s += static_cast<char>(r.between(0, 3) == 0 ? r.between(0x80, 0xFF) : r.between(0, 0x7F));
    const auto ids = tok->encode(s);
    std::string bytes;
    for (const token_id id : ids)
      bytes += tok->token_bytes(id);
    BOOST_REQUIRE(bytes == s);
    const std::string whole = tok->decode(ids);
    BOOST_TEST(utf8::is_valid(whole));
    BOOST_TEST(stream(tok, ids, true) == whole);
  }
}

BOOST_AUTO_TEST_SUITE_END()
