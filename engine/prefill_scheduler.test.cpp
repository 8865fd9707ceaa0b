#include "engine/prefill_scheduler.hpp"

#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

BOOST_AUTO_TEST_SUITE(prefill_scheduler_suite)

BOOST_AUTO_TEST_CASE(budgeted_chunks_follow_the_cost_model_and_change_no_result) {
  auto& e = tiny_engine();
  // A synthetic model: 1 ms per step + 10 us per token, finishing pass 2 ms.
  cost_model m;
  m.a0 = 1e6;
  m.a1 = 1e4;
  m.f0 = 2e6;
  prefill_scheduler s(prefill_scheduler::config{4e6, 16}, e, m);
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

BOOST_AUTO_TEST_SUITE_END()
