#include "recipe/tokenizer/tokenizer.hpp"

#include "recipe/tokenizer/test_assets.hpp"
#include "recipe/tokenizer/test_corpus.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>

using namespace deepinfer::recipe;

namespace {

/// A prompt of `parts` text segments between specials, the text taken from the corpus.
prompt_segments prompt_of(const std::string& text, std::size_t parts) {
  prompt_segments segs{prompt_segment::special(0, "<bos>")};
  const std::size_t step = text.size() / parts + 1;
  for (std::size_t at = 0; at < text.size(); at += step) {
    segs.push_back(prompt_segment::plain(text.substr(at, step)));
    segs.push_back(prompt_segment::special(128803, "<user>"));
  }
  return segs;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(tokenizer_bounded)

BOOST_AUTO_TEST_CASE(fits_exactly_when_the_count_is_within_the_limit) {
  auto tok = test::shared("tokenizer_v41.json");
  // Texts of every kind (English, Chinese, code), small and larger than one round.
  for (const std::size_t size : {std::size_t{3000}, std::size_t{600000}}) {
    const auto segs = prompt_of(test::corpus_detail::gather(test::corpus_detail::files("/usr/lib/python3.11", {".py"}, false),
                                                           size, size),
                                3);
    const auto want = tok->encode(segs);
    const std::size_t n = want.size();
    for (const std::size_t limit : {n, n + 1, n - 1, n / 2, n / 5, std::size_t{0}}) {
      const auto got = tok->encode_within(segs, limit);
      BOOST_TEST(got.fits == (n <= limit), "size " << size << " limit " << limit << " count " << n);
      if (got.fits) {
        BOOST_TEST(got.ids == want, boost::test_tools::per_element());
      } else {
        BOOST_TEST(got.at_least > limit);
        BOOST_TEST(got.at_least <= n, "a lower bound");
        if (got.exact)
          BOOST_TEST(got.at_least == n);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_seven_megabyte_word_is_refused_from_its_bytes) {
  // The probe: one 7 MB word cost 3.8 s of CPU before its 400. Its bytes alone prove it over.
  auto tok = test::shared("tokenizer_v41.json");
  const prompt_segments segs{prompt_segment::special(0, "<bos>"), prompt_segment::plain(std::string(7 << 20, 'a'))};
  const auto t0 = std::chrono::steady_clock::now();
  const auto got = tok->encode_within(segs, 40960);
  const double s = seconds_since(t0);
  BOOST_TEST(!got.fits);
  BOOST_TEST(got.ids.empty(), "nothing was encoded");
  BOOST_TEST(got.at_least > 40960u);
  BOOST_TEST(s < 0.5, "refused in " << s << " s");
}

BOOST_AUTO_TEST_CASE(ordinary_text_over_the_limit_stops_after_a_round) {
  // 700 KB of prose passes the byte bound (at most ~28K tokens could hold it) but is over after
  // its first round: far fewer ids than the whole prompt's were made.
  auto tok = test::shared("tokenizer_v41.json");
  std::string text;
  while (text.size() < 700u * 1024)
    text += "The quick brown fox jumps over the lazy dog, and then it naps in the warm afternoon sun.\n";
  const auto segs = prompt_of(text, 1);
  const auto got = tok->encode_within(segs, 40960);
  BOOST_TEST(!got.fits);
  BOOST_TEST(!got.exact);
  BOOST_TEST(got.at_least > 40960u);
  const auto all = tok->encode(segs).size();
  BOOST_TEST(!got.ids.empty(), "the byte bound alone did not decide");
  BOOST_TEST(got.ids.size() < all / 2, "stopped early: " << got.ids.size() << " of " << all << " ids");
}

BOOST_AUTO_TEST_SUITE_END()
