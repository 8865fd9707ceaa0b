#include "engine/prefill_scheduler.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>

#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

BOOST_AUTO_TEST_SUITE(prefill_scheduler_suite)

BOOST_AUTO_TEST_CASE(budgeted_chunks_follow_the_cost_model_and_change_no_result) {
  auto& e = tiny_engine();
  // A synthetic model: 1 ms per step + 10 us per token, finishing pass 2 ms.
  const deepinfer::balancers::cost_model m({.a0 = 1e-3, .a1 = 1e-5, .f0 = 2e-3});
  prefill_scheduler::config cfg{4e6, 16};
  cfg.adapt = false; // the policy alone, against the synthetic model
  prefill_scheduler s(cfg, e, m);
  auto p1 = random_tokens(700, 31), p2 = random_tokens(200, 32);
  prefill_request r1, r2;
  r1.seq = next_seq();
  r1.tokens = p1;
  r2.seq = next_seq();
  r2.tokens = p2;
  BOOST_REQUIRE(s.submit(r1).status == engine_status::ok);
  BOOST_REQUIRE(s.submit(r2).status == engine_status::ok);
  std::vector<std::pair<sequence_id, prefill_progress>> done;
  int steps = 0;
  while (s.pending() > 0) {
    auto st = s.step();
    ++steps;
    BOOST_TEST(st.predicted_ns <= 4e6 + 1);
    for (auto& [seq, q] : st.chunks)
      BOOST_TEST(q >= 1);
    for (auto& f : st.finished)
      done.push_back(std::move(f));
  }
  // (4 ms - 1 ms) / 10 us = 300 tokens per full step: 700 + 200 tokens need several steps.
  BOOST_TEST(steps >= 3);
  BOOST_REQUIRE(done.size() == 2u);
  BOOST_TEST(done[0].first.value == r1.seq.value); // FIFO
  auto [a, a_logits] = prefill_fresh(p1, decoder_mode::bounded);
  BOOST_TEST(max_abs_diff(done[0].second.logits, a_logits) == 0.0f);
  e.free(a);
  e.free(r1.seq);
  e.free(r2.seq);
}

// A short prompt behind a long one leads the next step; when the short ones took most of a
// step, the long one leads the next, so a stream of them cannot starve it.
BOOST_AUTO_TEST_CASE(a_short_prompt_leads_the_next_step_and_short_ones_cannot_starve_a_long_one) {
  auto& e = tiny_engine();
  const deepinfer::balancers::cost_model m({.a0 = 1e-3, .a1 = 1e-5, .f0 = 2e-3});
  prefill_scheduler::config cfg{4e6, 16};
  cfg.adapt = false;
  cfg.long_prompt_steps = 1; // more than 4 ms of predicted work is long
  prefill_scheduler s(cfg, e, m);
  prefill_request r1, r2, r3, r4;
  r1.seq = next_seq();
  r1.tokens = random_tokens(700, 41); // 10 ms: long
  r2.seq = next_seq();
  r2.tokens = random_tokens(100, 42); // 4 ms: short
  r3.seq = next_seq();
  r3.tokens = random_tokens(300, 43);
  BOOST_REQUIRE(s.submit(r1).status == engine_status::ok);
  BOOST_REQUIRE(s.submit(r2).status == engine_status::ok);
  BOOST_REQUIRE(s.submit(r3).status == engine_status::ok);
  BOOST_TEST(s.cancel(r3.seq));
  BOOST_TEST(!s.cancel(r3.seq));
  e.free(r3.seq);
  BOOST_TEST(s.pending() == 2u);
  auto first = s.step(); // the short one leads though it came second, and takes the whole step
  BOOST_REQUIRE(first.chunks.size() == 1u);
  BOOST_TEST(first.chunks[0].first.value == r2.seq.value);
  BOOST_REQUIRE(first.finished.size() == 1u);
  BOOST_TEST(first.finished[0].first.value == r2.seq.value);
  auto [a, a_logits] = prefill_fresh(r2.tokens, decoder_mode::bounded);
  BOOST_TEST(max_abs_diff(first.finished[0].second.logits, a_logits) == 0.0f);
  e.free(a);
  r4.seq = next_seq();
  r4.tokens = random_tokens(100, 44);
  BOOST_REQUIRE(s.submit(r4).status == engine_status::ok);
  auto second = s.step(); // the short ones had more than half of the last step: the long one leads
  BOOST_REQUIRE(second.chunks.size() == 1u);
  BOOST_TEST(second.chunks[0].first.value == r1.seq.value);
  BOOST_TEST(second.finished.empty());
  auto third = s.step(); // and then the short one again
  BOOST_REQUIRE(third.finished.size() == 1u);
  BOOST_TEST(third.finished[0].first.value == r4.seq.value);
  while (s.pending() > 0)
    s.step();
  BOOST_TEST(e.computed(r1.seq).value_or(0) == 700);
  e.free(r1.seq);
  e.free(r2.seq);
  e.free(r4.seq);
}

// A prompt that finishes is handed over at once (the rank answers its first token), before the
// long prompt's chunk that follows it in the same step runs.
BOOST_AUTO_TEST_CASE(a_finished_prompt_is_handed_over_before_the_chunks_after_it_run) {
  auto& e = tiny_engine();
  const deepinfer::balancers::cost_model m({.a0 = 1e-3, .a1 = 1e-5, .f0 = 2e-3});
  prefill_scheduler::config cfg{8e6, 16};
  cfg.adapt = false;
  cfg.long_prompt_steps = 1;
  prefill_scheduler s(cfg, e, m);
  prefill_request r1, r2;
  r1.seq = next_seq();
  r1.tokens = random_tokens(2000, 51); // 23 ms: long
  r2.seq = next_seq();
  r2.tokens = random_tokens(100, 52); // 4 ms: short
  BOOST_REQUIRE(s.submit(r1).status == engine_status::ok);
  s.step(); // the long one alone
  BOOST_REQUIRE(s.submit(r2).status == engine_status::ok);
  const int64_t long_before = e.computed(r1.seq).value_or(-1);
  BOOST_TEST(long_before > 0);
  std::vector<int64_t> long_at_handover;
  std::vector<float> short_logits;
  auto second = s.step([&](sequence_id seq, prefill_progress& p) {
    BOOST_TEST(seq.value == r2.seq.value);
    long_at_handover.push_back(e.computed(r1.seq).value_or(-1));
    short_logits = std::move(p.logits);
  });
  BOOST_TEST(second.finished.empty()); // handed over, not returned
  BOOST_REQUIRE(second.chunks.size() == 2u); // the short one, then the long one goes on
  BOOST_TEST(second.chunks[0].first.value == r2.seq.value);
  BOOST_REQUIRE(long_at_handover.size() == 1u);
  BOOST_TEST(long_at_handover[0] == long_before);
  BOOST_TEST(e.computed(r1.seq).value_or(-1) > long_before);
  auto [a, a_logits] = prefill_fresh(r2.tokens, decoder_mode::bounded);
  BOOST_TEST(max_abs_diff(short_logits, a_logits) == 0.0f);
  e.free(a);
  while (s.pending() > 0)
    s.step();
  e.free(r1.seq);
  e.free(r2.seq);
}

// A cost model 20x too optimistic (fitted on a faster CPU or ISA): the measured steps bring the
// correction up until the steps keep to their budget.
BOOST_AUTO_TEST_CASE(a_wrong_cost_model_is_corrected_by_the_measured_steps) {
  auto& e = tiny_engine();
  // Measure what a token costs here, then claim 20x less. The measuring prompt is long enough
  // that the prefill's fixed cost (the bounded decoder, the logits: ~30 ms) is a small part of
  // it, and a first prefill warms the engine: a 600-token prompt, measured cold, put a token at
  // 3-5x what the long prompt's steps cost, and the "20x optimistic" model was only 4-6x so.
  double ns_per_token = 0;
  for (const int64_t n : {600, 4000}) {
    prefill_request r;
    r.seq = next_seq();
    r.tokens = random_tokens(n, 51);
    const auto t0 = std::chrono::steady_clock::now();
    BOOST_REQUIRE(e.prefill(r).status == engine_status::ok);
    ns_per_token = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                   static_cast<double>(n);
    e.free(r.seq);
  }
  const deepinfer::balancers::cost_model optimistic({.a1 = ns_per_token / 20 * 1e-9});
  const double budget = 400 * ns_per_token; // ~400 tokens' worth per step
  prefill_scheduler::config cfg{budget, 16};
  prefill_scheduler s(cfg, e, optimistic);
  prefill_request r;
  r.seq = next_seq();
  r.tokens = random_tokens(24000, 52);
  BOOST_REQUIRE(s.submit(r).status == engine_status::ok);
  std::vector<double> over; // measured / budget per step
  while (s.pending() > 0)
    over.push_back(s.step().measured_ns / budget);
  BOOST_TEST_MESSAGE("steps " << over.size() << ", first " << over.front() << "x the budget, correction now " << s.correction());
  BOOST_TEST(over.front() > 4.0); // uncorrected, the first step overran several times
  BOOST_TEST(s.correction() > 5.0);
  // After the first few steps the rest keep close to the budget.
  std::vector<double> late(over.begin() + std::min<std::ptrdiff_t>(8, static_cast<std::ptrdiff_t>(over.size()) - 1), over.end() - 1);
  std::sort(late.begin(), late.end());
  if (!late.empty())
    BOOST_TEST(late[late.size() / 2] < 2.0, "median late step " << late[late.size() / 2] << "x the budget");
  e.free(r.seq);
}

BOOST_AUTO_TEST_SUITE_END()
