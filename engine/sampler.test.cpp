#include "engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <boost/test/unit_test.hpp>

using namespace deepinfer::engine;

namespace {
std::vector<float> logits() {
  return {0.1f, 2.0f, -1.0f, 1.5f, 1.9f, -3.0f, 0.0f, 1.0f};
}
} // namespace

BOOST_AUTO_TEST_SUITE(sampler_suite)

BOOST_AUTO_TEST_CASE(greedy_takes_the_argmax_with_its_logprob) {
  auto l = logits();
  std::mt19937_64 rng(1);
  sampling_params p;
  BOOST_TEST(sampler::sample(l.data(), 8, p, rng).logprob == 0.0f); // not asked for
  p.top_logprobs = 3;
  auto t = sampler::sample(l.data(), 8, p, rng);
  BOOST_TEST(t.id == 1);
  double z = 0;
  for (float x : l)
    z += std::exp(x);
  BOOST_TEST(std::fabs(t.logprob - (2.0 - std::log(z))) < 1e-5);
  BOOST_REQUIRE(t.top.size() == 3u);
  BOOST_TEST(t.top[0].first == 1);
  BOOST_TEST(t.top[1].first == 4);
  BOOST_TEST(t.top[2].first == 3);
  BOOST_TEST(t.top[0].second >= t.top[1].second);
}

BOOST_AUTO_TEST_CASE(same_seed_same_tokens_and_cuts_restrict_the_candidates) {
  auto l = logits();
  sampling_params p;
  p.temperature = 1.5f;
  p.seed = 9;
  std::mt19937_64 r1(p.seed), r2(p.seed);
  std::vector<int32_t> a, b;
  for (int i = 0; i < 200; ++i) {
    a.push_back(sampler::sample(l.data(), 8, p, r1).id);
    b.push_back(sampler::sample(l.data(), 8, p, r2).id);
  }
  BOOST_TEST(a == b);
  BOOST_TEST(std::set<int32_t>(a.begin(), a.end()).size() > 3u); // really samples
  p.top_k = 2;
  std::set<int32_t> seen;
  for (int i = 0; i < 200; ++i)
    seen.insert(sampler::sample(l.data(), 8, p, r1).id);
  BOOST_TEST((seen == std::set<int32_t>{1, 4}));
  p.top_k = 0;
  p.top_p = 0.01f; // the top token alone already exceeds 1 %
  for (int i = 0; i < 50; ++i)
    BOOST_TEST(sampler::sample(l.data(), 8, p, r1).id == 1);
}

BOOST_AUTO_TEST_SUITE_END()
