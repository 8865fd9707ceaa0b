// Prompt log-probabilities (legacy Completions' `echo` with `logprobs`): the score of prompt token
// j is what the logits after tokens [0, j) give it, the same bits as prefilling that prefix alone.
#include <algorithm>
#include <cmath>

#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

BOOST_AUTO_TEST_SUITE(prompt_logprobs)

namespace {

/// Prefills `tokens` cold in full mode with prompt logprobs of `top` alternatives, in chunks;
/// the sequence is freed again.
prefill_progress prefill_scored(const std::vector<int32_t>& tokens, int32_t top, int64_t chunk) {
  prefill_request req;
  req.seq = next_seq();
  req.tokens = tokens;
  req.mode = decoder_mode::full;
  req.sampling.max_tokens = 4;
  req.sampling.prompt_logprobs = top;
  auto p = prefill_to_end(req, chunk);
  tiny_engine().free(req.seq);
  return p;
}

} // namespace

BOOST_AUTO_TEST_CASE(each_prompt_token_is_scored_by_the_logits_of_its_prefix_alone) {
  auto& e = tiny_engine();
  // 700 tokens: the indexer picks top-k positions past 256, and the decoder windows wrap.
  const auto prompt = random_tokens(700, 41);
  auto p = prefill_scored(prompt, 3, 129);
  BOOST_REQUIRE_EQUAL(p.prompt.size(), prompt.size() - 1);
  for (int64_t j : {1, 2, 200, 256, 257, 300, 699}) {
    const std::vector<int32_t> prefix(prompt.begin(), prompt.begin() + j);
    auto [ref, logits] = prefill_fresh(prefix, decoder_mode::full);
    e.free(ref);
    const auto& got = p.prompt[static_cast<std::size_t>(j - 1)];
    BOOST_TEST(got.id == prompt[static_cast<std::size_t>(j)]);
    const auto want = sampler::score(logits.data(), static_cast<int64_t>(logits.size()), got.id, 3);
    BOOST_TEST(got.logprob == want.logprob, "token " << j);
    BOOST_TEST(got.rank == want.rank);
    BOOST_REQUIRE_EQUAL(got.top.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
      BOOST_TEST(got.top[k].first == want.top[k].first, "token " << j << " alternative " << k);
      BOOST_TEST(got.top[k].second == want.top[k].second);
    }
    // The alternatives are the most likely ids, best first.
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    BOOST_TEST(got.top[0].first == best);
    BOOST_TEST(got.top[0].second >= got.top[1].second);
    BOOST_TEST(got.top[1].second >= got.top[2].second);
    BOOST_TEST(got.logprob <= got.top[0].second);
    BOOST_TEST(std::isfinite(got.logprob));
  }
}

BOOST_AUTO_TEST_CASE(the_last_positions_logits_and_the_first_token_are_the_full_modes) {
  auto& e = tiny_engine();
  const auto prompt = random_tokens(300, 43);
  auto p = prefill_scored(prompt, 0, 1000);
  auto [ref, logits] = prefill_fresh(prompt, decoder_mode::full);
  e.free(ref);
  BOOST_TEST(max_abs_diff(p.logits, logits) == 0.0f);
  BOOST_TEST(p.prompt.size() == prompt.size() - 1);
  BOOST_TEST(p.prompt.back().top.empty()); // no alternatives asked for
}

BOOST_AUTO_TEST_CASE(a_hit_or_another_mode_is_refused) {
  auto& e = tiny_engine();
  prefill_request req;
  req.seq = next_seq();
  req.tokens = random_tokens(50, 44);
  req.mode = decoder_mode::bounded;
  req.sampling.prompt_logprobs = 1;
  auto p = e.begin_prefill(req);
  BOOST_TEST((p.status == engine_status::invalid_request));
  BOOST_TEST(p.error.find("prompt logprobs") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(score_orders_ties_by_id_and_normalizes) {
  std::vector<float> logits{0.5f, 2.0f, 2.0f, -1.0f, 2.0f};
  auto s = sampler::score(logits.data(), 5, 3, 4);
  BOOST_TEST(s.rank == 5); // -1 is the lowest of five
  BOOST_TEST(sampler::score(logits.data(), 5, 2, 0).rank == 1); // tied for the top
  BOOST_TEST(sampler::score(logits.data(), 5, 0, 0).rank == 4);
  BOOST_REQUIRE_EQUAL(s.top.size(), 4u);
  BOOST_TEST(s.top[0].first == 1);
  BOOST_TEST(s.top[1].first == 2);
  BOOST_TEST(s.top[2].first == 4);
  BOOST_TEST(s.top[3].first == 0);
  double total = 0;
  for (float l : logits)
    total += std::exp(static_cast<double>(l));
  BOOST_TEST(std::fabs(s.logprob - (-1.0 - std::log(total))) < 1e-5);
  // The same figures `sample` reports for a drawn token.
  sampling_params sp;
  sp.top_logprobs = 4;
  auto d = sampler::sample(logits.data(), 5, sp, 0);
  BOOST_TEST(d.id == 1);
  for (std::size_t k = 0; k < 4; ++k) {
    BOOST_TEST(d.top[k].first == s.top[k].first);
    BOOST_TEST(d.top[k].second == s.top[k].second);
  }
}

BOOST_AUTO_TEST_SUITE_END()
