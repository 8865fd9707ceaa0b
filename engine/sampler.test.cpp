#include "engine/sampler.hpp"
#include "engine/kernels/canonical.hpp"
#include "engine/kernels/isa.hpp"
#include "engine/kernels/kernel_table.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
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
  sampling_params p;
  BOOST_TEST(sampler::sample(l.data(), 8, p, 0).logprob == 0.0f); // not asked for
  p.top_logprobs = 3;
  auto t = sampler::sample(l.data(), 8, p, 1);
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
  std::vector<int32_t> a, b;
  for (int i = 0; i < 200; ++i) {
    a.push_back(sampler::sample(l.data(), 8, p, i).id);
    b.push_back(sampler::sample(l.data(), 8, p, i).id);
  }
  BOOST_TEST(a == b);
  BOOST_TEST(std::set<int32_t>(a.begin(), a.end()).size() > 3u); // really samples
  p.top_k = 2;
  std::set<int32_t> seen;
  for (int i = 0; i < 200; ++i)
    seen.insert(sampler::sample(l.data(), 8, p, i).id);
  BOOST_TEST((seen == std::set<int32_t>{1, 4}));
  p.top_k = 0;
  p.top_p = 0.01f; // the top token alone already exceeds 1 %
  for (int i = 0; i < 50; ++i)
    BOOST_TEST(sampler::sample(l.data(), 8, p, i).id == 1);
}

// vLLM's min_p: an id survives when its probability at the request's temperature is at least
// min_p times the top one's, so a hotter temperature lets more through.
BOOST_AUTO_TEST_CASE(min_p_keeps_the_ids_within_its_ratio_of_the_top_one_at_the_temperature) {
  auto l = logits();
  sampling_params p;
  p.seed = 3;
  p.min_p = 0.5f;
  const auto drawn = [&] {
    std::set<int32_t> seen;
    for (int i = 0; i < 400; ++i)
      seen.insert(sampler::sample(l.data(), 8, p, i).id);
    return seen;
  };
  p.temperature = 1.0f; // weights vs id 1: id 4 0.90, id 3 0.61, id 7 0.37
  BOOST_TEST((drawn() == std::set<int32_t>{1, 3, 4}));
  p.temperature = 2.0f; // id 7 0.61, id 0 0.39
  BOOST_TEST((drawn() == std::set<int32_t>{1, 3, 4, 7}));
  p.top_k = 2; // both cuts apply
  BOOST_TEST((drawn() == std::set<int32_t>{1, 4}));
  p.top_k = 0;
  p.min_p = 1.0f; // only the most likely id
  BOOST_TEST((drawn() == std::set<int32_t>{1}));
}

BOOST_AUTO_TEST_CASE(a_draw_depends_on_the_seed_and_the_position_alone) {
  // What lets a moved request (rerouted, handed off) continue as it would have in place: the
  // token at position 1000 is the same whether positions before it were sampled or not.
  auto l = logits();
  sampling_params p;
  p.temperature = 0.8f;
  p.seed = 42;
  std::vector<int32_t> forward, backward(64);
  for (int64_t i = 0; i < 64; ++i)
    forward.push_back(sampler::sample(l.data(), 8, p, 1000 + i).id);
  for (int64_t i = 63; i >= 0; --i)
    backward[static_cast<std::size_t>(i)] = sampler::sample(l.data(), 8, p, 1000 + i).id;
  BOOST_TEST(forward == backward);
  BOOST_TEST(sampler::random_bits(42, 7) == sampler::random_bits(42, 7));
  // Neighbouring seeds and positions give unrelated streams: no two of 4 x 256 draws collide,
  // and their bits are balanced.
  std::set<uint64_t> bits;
  int ones = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed)
    for (int64_t pos = 0; pos < 256; ++pos) {
      auto r = sampler::random_bits(seed, pos);
      bits.insert(r);
      ones += __builtin_popcountll(r);
    }
  BOOST_TEST(bits.size() == 1024u);
  BOOST_TEST(std::abs(ones - 1024 * 32) < 1024 * 2);
}

BOOST_AUTO_TEST_CASE(penalties_lower_the_logits_of_repeated_output_tokens_as_openai_documents) {
  // Prompt [7, 1], output [4, 4, 3] (output_from = 2): OpenAI's
  // mu[j] - c[j] * frequency_penalty - (c[j] > 0) * presence_penalty over the output only.
  const std::vector<int32_t> tokens = {7, 1, 4, 4, 3};
  sampling_params p;
  p.output_from = 2;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  auto l = logits();
  const auto before = l;
  sampler::process_logits(l.data(), 8, p, tokens);
  BOOST_TEST(l[4] == before[4] - 2 * 0.5f - 0.25f);
  BOOST_TEST(l[3] == before[3] - 0.5f - 0.25f);
  BOOST_TEST(l[1] == before[1]); // in the prompt only
  BOOST_TEST(l[7] == before[7]);
  // The distribution moves: a strong presence penalty takes greedy off the output's tokens 1 and
  // 4 (the two best) onto the unseen 3.
  p.presence_penalty = 2.0f;
  p.frequency_penalty = 0.0f;
  l = logits();
  sampler::process_logits(l.data(), 8, p, std::vector<int32_t>{7, 7, 1, 4});
  BOOST_TEST(sampler::sample(l.data(), 8, p, 4).id == 3);
  // Negative penalties favour repetition.
  p.presence_penalty = -3.0f;
  l = logits();
  sampler::process_logits(l.data(), 8, p, std::vector<int32_t>{7, 7, 6});
  BOOST_TEST(sampler::sample(l.data(), 8, p, 3).id == 6);
}

BOOST_AUTO_TEST_CASE(a_spent_thinking_budget_forces_the_end_of_the_reasoning_once) {
  sampling_params p;
  p.temperature = 1.0f;
  p.thinking_budget = 3;
  p.thinking_end = 6;
  p.output_from = 2;
  BOOST_TEST(p.processes_logits());
  // Two output tokens of a budget of three: untouched.
  auto l = logits();
  const auto before = l;
  sampler::process_logits(l.data(), 8, p, std::vector<int32_t>{7, 7, 1, 2});
  BOOST_TEST((l == before));
  // Three, none of them the end: only the end can be drawn, whatever the seed.
  for (int i = 0; i < 20; ++i) {
    l = logits();
    sampler::process_logits(l.data(), 8, p, std::vector<int32_t>{7, 7, 1, 2, 3});
    BOOST_TEST(sampler::sample(l.data(), 8, p, 5 + i).id == 6);
  }
  // The reasoning already ended (in the output; the prompt's own tokens do not count): free.
  l = logits();
  sampler::process_logits(l.data(), 8, p, std::vector<int32_t>{7, 6, 1, 6, 3, 4});
  BOOST_TEST((l == before));
  l = logits();
  sampler::process_logits(l.data(), 8, p, std::vector<int32_t>{6, 6, 1, 2, 3, 4});
  BOOST_TEST(std::isinf(l[0]));
}

BOOST_AUTO_TEST_CASE(repetition_min_tokens_and_logit_bias_follow_vllm) {
  sampling_params p;
  p.output_from = 1;
  p.repetition_penalty = 2.0f;
  auto l = logits();
  const auto before = l;
  sampler::process_logits(l.data(), 8, p, std::vector<int32_t>{1, 2, 2});
  BOOST_TEST(l[1] == before[1] / 2); // the prompt counts too; positive logits are divided
  BOOST_TEST(l[2] == before[2] * 2); // negative ones multiplied, once per distinct id
  BOOST_TEST(l[0] == before[0]);
  // min_tokens: the stop id cannot win before that many output tokens, then it can.
  sampling_params m;
  m.stop_ids = {1};
  m.min_tokens = 2;
  m.output_from = 3;
  l = logits();
  sampler::process_logits(l.data(), 8, m, std::vector<int32_t>{5, 5, 5, 0});
  BOOST_TEST(std::isinf(l[1]));
  BOOST_TEST(sampler::sample(l.data(), 8, m, 4).id == 4);
  l = logits();
  sampler::process_logits(l.data(), 8, m, std::vector<int32_t>{5, 5, 5, 0, 0});
  BOOST_TEST(sampler::sample(l.data(), 8, m, 5).id == 1);
  // logit_bias: +100 makes a token certain, -100 bans it, even at temperature 1.
  sampling_params b;
  b.temperature = 1.0f;
  b.logit_bias = {{5, 100.0f}, {1, -100.0f}};
  for (int i = 0; i < 20; ++i) {
    l = logits();
    sampler::process_logits(l.data(), 8, b, std::vector<int32_t>{});
    BOOST_TEST(sampler::sample(l.data(), 8, b, i).id == 5);
  }
  // Unused: untouched.
  sampling_params none;
  BOOST_TEST(!none.processes_logits());
  l = logits();
  sampler::process_logits(l.data(), 8, none, std::vector<int32_t>{1, 1, 1});
  BOOST_TEST((l == logits()));
}

// vLLM's allowed_token_ids and bad_words: the mask keeps exactly the allowed ids' logits; a bad
// word's last token is blocked only right after its other tokens in the output (not the prompt).
BOOST_AUTO_TEST_CASE(allowed_ids_and_bad_words_block_what_vllm_blocks) {
  sampling_params a;
  a.allowed_ids = {0, 5, 6};
  BOOST_TEST(a.processes_logits());
  auto l = logits();
  const auto before = l;
  sampler::process_logits(l.data(), 8, a, std::vector<int32_t>{1, 2});
  for (int32_t i = 0; i < 8; ++i)
    BOOST_TEST((i == 0 || i == 5 || i == 6 ? l[i] == before[i] : std::isinf(l[i]) && l[i] < 0));
  BOOST_TEST(sampler::sample(l.data(), 8, a, 2).id == 0); // 0.1 beats 0.0 and -3
  a.temperature = 1.0f;
  for (int i = 0; i < 50; ++i) {
    l = logits();
    sampler::process_logits(l.data(), 8, a, std::vector<int32_t>{});
    const auto id = sampler::sample(l.data(), 8, a, i).id;
    BOOST_TEST((id == 0 || id == 5 || id == 6));
  }
  // Bad words [4] (one token) and [3, 1] (two): 4 always blocked; 1 only right after a 3.
  sampling_params b;
  b.bad_words = {{4}, {3, 1}};
  b.output_from = 2;
  l = logits();
  sampler::process_logits(l.data(), 8, b, std::vector<int32_t>{3, 3}); // a 3 in the prompt only
  BOOST_TEST(std::isinf(l[4]));
  BOOST_TEST(l[1] == before[1]);
  BOOST_TEST(sampler::sample(l.data(), 8, b, 2).id == 1);
  l = logits();
  sampler::process_logits(l.data(), 8, b, std::vector<int32_t>{3, 3, 0, 3});
  BOOST_TEST(std::isinf(l[1]));
  BOOST_TEST(std::isinf(l[4]));
  BOOST_TEST(sampler::sample(l.data(), 8, b, 4).id == 3); // 2.0 and 1.9 gone: 1.5 next
  // Nothing left (the only allowed id is a stop id under min_tokens): the lowest id, no NaN.
  sampling_params c;
  c.allowed_ids = {1};
  c.stop_ids = {1};
  c.min_tokens = 1;
  c.temperature = 0.7f;
  c.logprobs = true;
  l = logits();
  sampler::process_logits(l.data(), 8, c, std::vector<int32_t>{});
  BOOST_TEST(sampler::sample(l.data(), 8, c, 0).id == 0);
}

// The vectorized exponentials (each ISA's kernel) give the scalar canonical exp's bits: the same
// draws, logprobs and alternatives on a vocabulary-sized row, under every sampling setting.
BOOST_AUTO_TEST_CASE(the_kernels_exponentials_draw_what_the_scalar_ones_draw) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> row(129280);
  for (auto& x : row)
    x = d(rng);
  for (auto isa : deepinfer::engine::kernels::supported_cpu_isas()) {
    const auto fn = deepinfer::engine::kernels::kernels_for(isa).exp_shifted;
    for (float temperature : {0.0f, 0.7f, 1.3f})
      for (float min_p : {0.0f, 0.05f})
        for (float top_p : {1.0f, 0.9f})
          for (int64_t position : {0, 17}) {
            sampling_params p;
            p.temperature = temperature;
            p.min_p = min_p;
            p.top_p = top_p;
            p.seed = 99;
            p.logprobs = true;
            p.top_logprobs = 3;
            const auto a = sampler::sample(row.data(), static_cast<int64_t>(row.size()), p, position);
            const auto b = sampler::sample(row.data(), static_cast<int64_t>(row.size()), p, position, fn);
            BOOST_TEST(a.id == b.id);
            BOOST_TEST(a.logprob == b.logprob);
            BOOST_TEST(a.top == b.top);
          }
    const auto a = sampler::score(row.data(), static_cast<int64_t>(row.size()), 12, 5);
    const auto b = sampler::score(row.data(), static_cast<int64_t>(row.size()), 12, 5, fn);
    BOOST_TEST(a.logprob == b.logprob);
    BOOST_TEST(a.top == b.top);
  }
}

// Top-p over the whole vocabulary draws what the plain definition draws: ids sorted by logit
// (ties by id), weights exp((logit - max) / T) summed in that order, the smallest prefix reaching
// p of the total, a uniform draw over it. Logits with many ties (rounded to a coarse grid), and
// without.
BOOST_AUTO_TEST_CASE(top_p_draws_what_a_full_sort_draws) {
  std::mt19937 rng(8);
  std::normal_distribution<float> d(0.0f, 2.0f);
  // narrow: every logit in [1, 2), so every key shares its top digits (a radix pass skipped).
  std::vector<float> coarse(20000), fine(20000), narrow(20000);
  for (std::size_t i = 0; i < coarse.size(); ++i) {
    fine[i] = d(rng);
    coarse[i] = std::round(fine[i] * 16.0f) / 16.0f;
    narrow[i] = 1.0f + std::fmod(std::fabs(fine[i]), 1.0f);
  }
  for (const auto& row : {coarse, fine, narrow}) {
    for (float temperature : {0.5f, 1.0f})
      for (float top_p : {0.5f, 0.9f, 0.99f})
        for (int64_t position = 0; position < 40; ++position) {
          sampling_params p;
          p.temperature = temperature;
          p.top_p = top_p;
          p.seed = 3;
          const auto got = sampler::sample(row.data(), static_cast<int64_t>(row.size()), p, position);
          // The definition, spelled out.
          std::vector<int32_t> ids(row.size());
          std::iota(ids.begin(), ids.end(), 0);
          std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
          const float mx = row[static_cast<std::size_t>(ids[0])];
          std::vector<double> w;
          double total = 0.0;
          for (auto id : ids) {
            w.push_back(deepinfer::engine::kernels::canonical::exp(static_cast<float>((row[id] - mx) / double{temperature})));
            total += w.back();
          }
          double acc = 0.0;
          std::size_t n = 0;
          while (n < ids.size() && acc < top_p * total)
            acc += w[n++];
          n = std::max<std::size_t>(n, 1);
          total = std::accumulate(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
          const double u = static_cast<double>(sampler::random_bits(3, position) >> 11) * 0x1.0p-53 * total;
          std::size_t pick = 0;
          for (double a = w[0]; a <= u && pick + 1 < n; a += w[++pick]) {
          }
          BOOST_TEST(got.id == ids[pick], "T " << temperature << " top_p " << top_p << " position " << position);
        }
  }
}

BOOST_AUTO_TEST_SUITE_END()
