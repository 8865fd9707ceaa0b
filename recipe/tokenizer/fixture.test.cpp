#include "recipe/tokenizer/hf_reference.hpp"
#include "recipe/tokenizer/test_assets.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>

using namespace deepinfer::recipe;

namespace {

// The official DeepSeek-V3.2 gold prompt (copied from ../shared/spec/fixtures/dsv32), stripped of
// leading/trailing whitespace as the official test does.
std::string fixture_prompt() {
  std::ifstream in{test::source_dir() / "recipe/tokenizer/testdata/dsv32/test_output.txt", std::ios::binary};
  std::stringstream buf;
  buf << in.rdbuf();
  std::string s = buf.str();
  const auto b = s.find_first_not_of(" \t\r\n\v\f");
  const auto e = s.find_last_not_of(" \t\r\n\v\f");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

// The prompt as the renderer produces it: the V3.2 control tokens are special segments.
prompt_segments as_segments(const tokenizer& tok, const std::string& text) {
  const std::vector<std::string> controls{"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>"};
  prompt_segments segs;
  std::size_t pos = 0, start = 0;
  while (pos < text.size()) {
    const std::string* hit = nullptr;
    for (const auto& c : controls)
      if (text.compare(pos, c.size(), c) == 0)
        hit = &c;
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    if (start < pos)
      segs.push_back(prompt_segment::plain(text.substr(start, pos - start)));
    segs.push_back(prompt_segment::special(*tok.special_id(*hit), *hit));
    pos += hit->size();
    start = pos;
  }
  if (start < text.size())
    segs.push_back(prompt_segment::plain(text.substr(start)));
  return segs;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tokenizer_fixture)

BOOST_AUTO_TEST_CASE(official_v32_fixture_encodes_to_1442_tokens_as_huggingface) {
  auto tok = test::shared("tokenizer_v32.json");
  const std::string text = fixture_prompt();
  BOOST_REQUIRE_EQUAL(text.size() > 4000, true);
  const auto whole = tok->encode_with_special_tokens(text);
  BOOST_TEST(whole.size() == 1442u); // tokenizer-reference.md §3 / fixtures/dsv32/README.md
  BOOST_TEST(whole.front() == 0);     // BOS
  const auto hf = test::hf_encode(test::asset("tokenizer_v32.json"), {text});
  BOOST_REQUIRE_EQUAL(hf.size(), 1u);
  BOOST_TEST(whole == hf[0], boost::test_tools::per_element());
  BOOST_TEST(tok->decode(whole) == text);
}

BOOST_AUTO_TEST_CASE(fixture_as_segments_gives_the_same_ids_in_parallel) {
  auto one = test::shared("tokenizer_v32.json");
  auto par = test::always_parallel("tokenizer_v32.json");
  const std::string text = fixture_prompt();
  const auto segs = as_segments(*one, text);
  BOOST_TEST(segs.size() > 5u);
  const auto whole = one->encode_with_special_tokens(text);
  BOOST_TEST(one->encode(segs) == whole, boost::test_tools::per_element());
  BOOST_TEST(par->encode(segs) == whole, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
