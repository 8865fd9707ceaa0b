#include "recipe/tokenizer/tokenizer.hpp"

#include "recipe/tokenizer/test_assets.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>
#include <vector>

using namespace deepinfer::recipe;
using ids = std::vector<token_id>;

BOOST_AUTO_TEST_SUITE(tokenizer_spec)

// Every row of the checked-pieces table of tokenizer-reference.md §2.
BOOST_AUTO_TEST_CASE(encodes_the_spec_table_exactly) {
  auto tok = test::shared("tokenizer_v32.json");
  BOOST_TEST(tok->encode("1234567 12.5") == (ids{6895, 18009, 25, 223, 736, 16, 23}), boost::test_tools::per_element());
  BOOST_TEST(tok->encode("中文abc日本語カタカナ") == (ids{21134, 32372, 88768, 15961, 11767, 15961, 27071}),
             boost::test_tools::per_element());
  BOOST_TEST(tok->encode("Hello 世界") == (ids{19923, 223, 3427}), boost::test_tools::per_element());
  BOOST_TEST(tok->encode("a.append(x)") == (ids{67, 10108, 4042, 11}), boost::test_tools::per_element());
  BOOST_TEST(tok->encode("你好，世界！") == (ids{30594, 303, 3427, 1175}), boost::test_tools::per_element());
  BOOST_TEST(tok->encode("  hello  world\n\n\tx") == (ids{223, 44388, 223, 2058, 271, 51669}),
             boost::test_tools::per_element());
  BOOST_TEST(tok->encode_with_special_tokens("<think>hi</think>") == (ids{128798, 6366, 128799}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(official_v32_example_matches_the_model_card_ids) {
  auto tok = test::shared("tokenizer_v32.json");
  const char* text = "<｜begin▁of▁sentence｜><｜User｜>hello<｜Assistant｜></think>Hello! I am DeepSeek.<｜end▁of▁sentence｜>"
                     "<｜User｜>1+1=?<｜Assistant｜><think>";
  const ids want{0, 128803, 33310, 128804, 128799, 19923, 3, 342, 1030, 22651, 4374, 1465, 16, 1, 128803, 19, 13, 19, 127252, 128804, 128798};
  BOOST_TEST(tok->encode_with_special_tokens(text) == want, boost::test_tools::per_element());
  // The same prompt as segments: the renderer's ids pass through, the text is plain.
  prompt_segments segs{prompt_segment::special(0, ""), prompt_segment::special(128803, ""), prompt_segment::plain("hello"),
                       prompt_segment::special(128804, ""), prompt_segment::special(128799, ""),
                       prompt_segment::plain("Hello! I am DeepSeek."), prompt_segment::special(1, ""),
                       prompt_segment::special(128803, ""), prompt_segment::plain("1+1=?"), prompt_segment::special(128804, ""),
                       prompt_segment::special(128798, "")};
  BOOST_TEST(tok->encode(segs) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(v4_test_vectors_reencode_identically) {
  auto tok = test::shared("tokenizer_v41.json");
  BOOST_TEST(tok->encode("Hello! 毕老师！1 + 1 = 2 ĠÑĤÐ²ÑĬÑĢ") ==
               (ids{19923, 3, 223, 5464, 5008, 1175, 19, 940, 223, 19, 438, 223, 20, 6113, 257, 76589, 131, 100, 76032, 1628,
                    76589, 131, 108, 76589, 131, 98}),
             boost::test_tools::per_element());
  BOOST_TEST(tok->encode("你好") == ids{30594}, boost::test_tools::per_element());
  BOOST_TEST(tok->encode("推理") == ids{36101}, boost::test_tools::per_element());
  BOOST_TEST(tok->encode("答案") == ids{7624}, boost::test_tools::per_element());
  BOOST_TEST(tok->encode_with_special_tokens("<｜User｜>你好<｜Assistant｜><think>推理</think>答案<｜end▁of▁sentence｜>") ==
               (ids{128803, 30594, 128804, 128821, 36101, 128822, 7624, 1}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(special_ids_are_looked_up_by_spelling) {
  auto v32 = test::shared("tokenizer_v32.json");
  auto v41 = test::shared("tokenizer_v41.json");
  BOOST_TEST(*v32->special_id("</think>") == 128799);
  BOOST_TEST(*v41->special_id("</think>") == 128822);
  BOOST_TEST(*v41->special_id("<｜System｜>") == 128799);
  BOOST_TEST(*v41->special_id("｜DSML｜") == 128825);
  BOOST_TEST(*v41->special_id("<｜end▁of▁sentence｜>") == 1);
  BOOST_TEST(!v32->special_id("｜DSML｜").has_value());
  BOOST_TEST(!v32->special_id("hello").has_value());
  BOOST_TEST(v32->vocab_size() == 128815u);
  BOOST_TEST(v41->vocab_size() == 128847u);
  BOOST_TEST(v41->token_bytes(128822) == "</think>");
  BOOST_TEST(v32->token_bytes(223) == " ");
  BOOST_TEST(v32->token_bytes(999999).empty());
  BOOST_TEST(!v32->contains(-1));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tokenizer_concurrency)

// Several callers share one pooled tokenizer: the pool serves whoever asks first, the others
// encode on their own threads; every result must be the single-thread one.
BOOST_AUTO_TEST_CASE(concurrent_callers_get_single_thread_ids) {
  auto par = test::always_parallel("tokenizer_v32.json");
  auto one = test::shared("tokenizer_v32.json");
  prompt_segments segs;
  for (int i = 0; i < 60; ++i) {
    segs.push_back(prompt_segment::special(128803, "<｜User｜>"));
    segs.push_back(prompt_segment::plain("line " + std::to_string(i) + " of a prompt: 中文 and code {x: [1, 2]}\n" +
                                         std::string(static_cast<std::size_t>(i * 37 % 500), 'a') + "\nend\n"));
  }
  const auto want = one->encode(segs);
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 25; ++r)
        bad += par->encode(segs) != want;
    });
  for (auto& c : callers)
    c.join();
  BOOST_TEST(bad.load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
