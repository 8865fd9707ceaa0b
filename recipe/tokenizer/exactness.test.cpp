#include "recipe/tokenizer/hf_reference.hpp"
#include "recipe/tokenizer/test_assets.hpp"
#include "recipe/tokenizer/test_corpus.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

using namespace deepinfer::recipe;

namespace {

// The corpus and HF's ids for it, computed once per test process.
struct corpus_fixture {
  std::vector<std::string> records;
  std::vector<std::vector<token_id>> hf;

  static const corpus_fixture& get() {
    static const corpus_fixture f = [] {
      corpus_fixture c;
      c.records = test::build_corpus(5'300'000);
      c.hf = test::hf_encode(test::asset("tokenizer_v32_plain.json"), c.records);
      return c;
    }();
    return f;
  }
};

std::string excerpt(const std::string& s) {
  return nlohmann::json(s.substr(0, 200)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace

BOOST_AUTO_TEST_SUITE(tokenizer_exactness)

BOOST_AUTO_TEST_CASE(corpus_is_large_and_mixed) {
  const auto& c = corpus_fixture::get();
  std::size_t bytes = 0, with_newline = 0;
  for (const auto& r : c.records) {
    bytes += r.size();
    with_newline += r.find('\n') != std::string::npos;
  }
  BOOST_TEST_MESSAGE("corpus: " << c.records.size() << " records, " << bytes << " bytes");
  BOOST_TEST(bytes >= 5'000'000u);
  BOOST_TEST(with_newline > c.records.size() / 2);
  BOOST_REQUIRE_EQUAL(c.hf.size(), c.records.size());
}

BOOST_AUTO_TEST_CASE(every_record_encodes_exactly_as_huggingface) {
  const auto& c = corpus_fixture::get();
  auto tok = test::shared("tokenizer_v32.json");
  BOOST_REQUIRE_EQUAL(c.hf.size(), c.records.size());
  std::size_t mismatches = 0, tokens = 0;
  for (std::size_t i = 0; i < c.records.size(); ++i) {
    const auto ours = tok->encode(c.records[i]);
    tokens += ours.size();
    if (ours == c.hf[i])
      continue;
    if (++mismatches <= 10) {
      std::size_t k = 0;
      while (k < ours.size() && k < c.hf[i].size() && ours[k] == c.hf[i][k])
        ++k;
      BOOST_TEST_MESSAGE("record " << i << " differs at token " << k << " (ours "
                                   << (k < ours.size() ? ours[k] : -1) << ", hf " << (k < c.hf[i].size() ? c.hf[i][k] : -1)
                                   << "): " << excerpt(c.records[i]));
    }
  }
  BOOST_TEST_MESSAGE("compared " << tokens << " tokens");
  BOOST_TEST(mismatches == 0u);
}

BOOST_AUTO_TEST_CASE(decode_of_encode_gives_back_every_record) {
  const auto& c = corpus_fixture::get();
  auto tok = test::shared("tokenizer_v32.json");
  std::size_t bad = 0;
  for (const auto& r : c.records)
    bad += tok->decode(tok->encode(r)) != r;
  BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_CASE(parallel_segments_equal_one_thread) {
  const auto& c = corpus_fixture::get();
  auto par = test::always_parallel("tokenizer_v32.json");
  auto one = test::shared("tokenizer_v32.json");
  // 400 records joined by the BOS id, in prompts of 40 segments each.
  for (std::size_t start = 0; start + 40 <= 400; start += 40) {
    prompt_segments segs;
    std::vector<token_id> want;
    std::string joined;
    for (std::size_t i = start; i < start + 40; ++i) {
      const auto& r = c.records[i * (c.records.size() / 400)];
      segs.push_back(prompt_segment::plain(r));
      segs.push_back(prompt_segment::special(0, ""));
      const auto ids = one->encode(r);
      want.insert(want.end(), ids.begin(), ids.end());
      want.push_back(0);
      joined += r;
    }
    BOOST_TEST(par->encode(segs) == want);
    // One long segment is cut at safe line breaks only: same ids as one thread.
    BOOST_TEST(par->encode(prompt_segments{prompt_segment::plain(joined)}) == one->encode(joined));
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tokenizer_exactness_added_tokens)

// The trusted path (added-token spellings become ids) against HF's whole-string encode with the
// full V3.2 and V4.1 files, on the corpus records that contain spellings or their pieces.
BOOST_AUTO_TEST_CASE(encode_with_special_tokens_matches_huggingface) {
  const auto& c = corpus_fixture::get();
  std::vector<std::string> sample;
  for (const auto& r : c.records)
    if (r.find("｜") != std::string::npos || r.find("think>") != std::string::npos)
      sample.push_back(r);
  BOOST_TEST_MESSAGE(sample.size() << " records with spellings");
  BOOST_TEST(sample.size() > 100u);
  for (const char* file : {"tokenizer_v32.json", "tokenizer_v41.json"}) {
    auto tok = test::shared(file);
    const auto hf = test::hf_encode(test::asset(file), sample);
    BOOST_REQUIRE_EQUAL(hf.size(), sample.size());
    std::size_t bad = 0, specials = 0;
    for (std::size_t i = 0; i < sample.size(); ++i) {
      const auto ours = tok->encode_with_special_tokens(sample[i]);
      for (const token_id id : ours)
        specials += tok->find_added(id) != nullptr;
      bad += ours != hf[i];
    }
    BOOST_TEST(bad == 0u, file);
    BOOST_TEST(specials > 100u, file);
  }
}

BOOST_AUTO_TEST_CASE(no_record_of_the_corpus_encodes_to_an_added_token) {
  const auto& c = corpus_fixture::get();
  auto tok = test::shared("tokenizer_v41.json");
  std::size_t found = 0;
  for (const auto& r : c.records)
    for (const token_id id : tok->encode(r))
      found += tok->find_added(id) != nullptr;
  BOOST_TEST(found == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tokenizer_unicode_version)

// The Unicode version of the class tables must be HF's (Oniguruma 6.9.10: Unicode 16.0). Each code
// point X of planes 0-3 and 14 is probed as " Xa": a space joins a following letter, mark,
// punctuation or symbol into one piece and stands alone before anything else, and the byte
// tokens of the space and X's lead byte merge, so a class disagreement changes the ids.
BOOST_AUTO_TEST_CASE(every_code_point_is_classified_as_huggingface_does) {
  std::vector<std::string> records;
  for (char32_t base : {0x0u, 0x10000u, 0x20000u, 0x30000u, 0xE0000u})
    for (char32_t block = base; block < base + 0x10000; block += 512) {
      std::string r;
      for (char32_t c = block; c < block + 512; ++c)
        if (c < 0xD800 || c > 0xDFFF) {
          r += ' ';
          test::append_utf8(r, c);
          r += 'a';
        }
      records.push_back(std::move(r));
    }
  const auto hf = test::hf_encode(test::asset("tokenizer_v32_plain.json"), records);
  BOOST_REQUIRE_EQUAL(hf.size(), records.size());
  auto tok = test::shared("tokenizer_v32.json");
  std::size_t bad = 0;
  for (std::size_t i = 0; i < records.size(); ++i)
    if (tok->encode(records[i]) != hf[i] && ++bad <= 5)
      BOOST_TEST_MESSAGE("block " << i << " differs: " << excerpt(records[i]));
  BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
