// spec_planner: fixed verifies every draft; variable takes drafts best expected gain first and
// stops where the next one costs more time than its expected tokens bring.
#include <boost/test/unit_test.hpp>

#include "engine/spec_planner.hpp"

#include <cmath>
#include <vector>

using namespace deepinfer::engine;

namespace {
draft_proposal with(std::initializer_list<float> conf) {
  draft_proposal p;
  for (float c : conf) {
    p.tokens[p.count] = p.count;
    p.confidence[p.count++] = c;
  }
  return p;
}
} // namespace

BOOST_AUTO_TEST_SUITE(spec_planner_suite)

BOOST_AUTO_TEST_CASE(fixed_takes_all_off_takes_none) {
  const draft_proposal ps[] = {with({0.1f, 0.1f, 0.1f, 0.1f, 0.1f}), with({}), with({0.9f, 0.9f})};
  spec_planner fixed{speculative_mode::fixed}, off{speculative_mode::off};
  for (int i = 0; i < 10; ++i) {
    BOOST_TEST((fixed.plan(ps) == std::vector<int32_t>{5, 0, 2}));
    BOOST_TEST((off.plan(ps) == std::vector<int32_t>{0, 0, 0}));
  }
}

BOOST_AUTO_TEST_CASE(variable_keeps_drafts_worth_their_rows) {
  spec_planner p{speculative_mode::variable};
  // A step costs 1 + 0.1 per row: with 2 requests (base 2 tokens / 1.2), a draft of gain g is
  // worth it while g > current tokens/s x 0.1.
  p.set_curve({1.0, 0.1});
  const draft_proposal ps[] = {with({0.9f, 0.9f, 0.9f, 0.1f, 0.9f}), with({0.05f, 0.9f, 0.9f, 0.9f, 0.9f})};
  // Gains: request 0: .9 .81 .729 .0729 .066; request 1: .05 .045 ... The first three of request
  // 0 raise tokens/s; the rest do not.
  BOOST_TEST((p.plan(ps) == std::vector<int32_t>{3, 0}));
  // Rows that cost almost nothing: every draft with any gain is taken.
  p.set_curve({1.0, 1e-6});
  BOOST_TEST((p.plan(ps) == std::vector<int32_t>{5, 5}));
  // Rows as dear as the whole step: none is, ever (the calibration learns from what the
  // sequences emit, not from verifying drafts that do not pay).
  p.set_curve({0.0, 1.0});
  for (uint64_t i = 0; i < 2 * spec_planner::look_again_every; ++i)
    BOOST_TEST((p.plan(ps) == std::vector<int32_t>{0, 0}));
}

BOOST_AUTO_TEST_CASE(every_proposal_is_compared_with_what_its_sequence_emits) {
  spec_planner p{speculative_mode::variable};
  auto drafts = [](std::initializer_list<int32_t> tokens, float c) {
    draft_proposal q;
    for (int32_t t : tokens) {
      q.tokens[q.count] = t;
      q.confidence[q.count++] = c;
    }
    return q;
  };
  // A head that says 0.2 everywhere, on a sequence that goes on exactly as drafted 9 times in 10:
  // no draft was verified (plain steps, one token each), yet every position learns.
  std::vector<int32_t> stream;
  for (int i = 0; i < 2000; ++i)
    stream.push_back(i % 10 == 9 ? 1000 + i : i);
  const draft_proposal none;
  for (std::size_t i = 0; i + 6 < stream.size(); ++i) {
    p.plan(std::span<const draft_proposal>(&none, 1));
    // Proposed after token i: tokens i+1 .. i+5 as the pattern would be without the odd ones.
    const auto q = drafts({static_cast<int32_t>(i + 1), static_cast<int32_t>(i + 2), static_cast<int32_t>(i + 3),
                           static_cast<int32_t>(i + 4), static_cast<int32_t>(i + 5)}, 0.2f);
    const int32_t next = stream[i + 1];
    p.observe_emitted(7, q, std::span<const int32_t>(&next, 1), false);
  }
  // Given drafts 1..j-1 accepted, draft j is: 9/10, 8/9, 7/8, 6/7, 5/6.
  for (int j = 0; j < 5; ++j)
    BOOST_TEST(p.calibrated(j, 0.2f) == (9.0 - j) / (10.0 - j), boost::test_tools::tolerance(0.02));
  // A step that verified two drafts and emitted three tokens (both accepted, then the target's
  // own) is the same comparison: emitted tokens are what verification accepted.
  spec_planner v{speculative_mode::variable};
  for (int i = 0; i < 400; ++i) {
    v.plan(std::span<const draft_proposal>(&none, 1));
    const auto q = drafts({1, 2, 3}, 0.5f);
    const int32_t out[] = {1, 2, 9};
    v.observe_emitted(8, q, out, true); // finished: nothing carries to the next step
  }
  BOOST_TEST(v.calibrated(0, 0.5f) == 1.0, boost::test_tools::tolerance(0.05));
  BOOST_TEST(v.calibrated(1, 0.5f) == 1.0, boost::test_tools::tolerance(0.05));
  BOOST_TEST(v.calibrated(2, 0.5f) == 0.0, boost::test_tools::tolerance(0.05));
  BOOST_TEST(v.calibrated(3, 0.5f) == 0.5, boost::test_tools::tolerance(1e-6)); // never compared
}

BOOST_AUTO_TEST_CASE(a_sequence_s_last_proposal_prices_its_next_drafts) {
  // Two sequences whose head says 0.5 for every draft: sequence 1 goes on exactly as drafted,
  // sequence 2 never does. Pooled over both, a first draft is accepted half the time; after its
  // own last proposal each sequence's next one is all but certain either way.
  spec_planner p{speculative_mode::variable};
  p.set_curve({1.0, 0.05});
  const uint64_t ids[] = {1, 2};
  int32_t at[] = {0, 0}; // tokens emitted so far; sequence 1's text is 0, 1, 2, ...
  auto proposal = [&](int s) {
    draft_proposal q;
    for (int32_t j = 1; j <= 5; ++j) {
      q.tokens[q.count] = s == 0 ? at[0] + j : -j; // sequence 2's drafts are never its text
      q.confidence[q.count++] = 0.5f;
    }
    return q;
  };
  for (int step = 0; step < 200; ++step) {
    const draft_proposal ps[] = {proposal(0), proposal(1)};
    const auto lengths = p.plan(ps, ids);
    for (int s = 0; s < 2; ++s) {
      // What verification emits: the drafts it accepted, then the target's own token.
      std::vector<int32_t> out;
      for (int32_t j = 0; j < (s == 0 ? lengths[0] : 0); ++j)
        out.push_back(at[0] + 1 + j);
      out.push_back(s == 0 ? at[0] + 1 + lengths[0] : 1000 + step);
      at[s] += static_cast<int32_t>(out.size());
      p.observe_emitted(ids[s], ps[s], out, false);
    }
  }
  const draft_proposal ps[] = {proposal(0), proposal(1)};
  BOOST_TEST(p.calibrated(0, 0.5f) == 0.5, boost::test_tools::tolerance(0.05));
  BOOST_TEST(p.calibrated(0, 0.5f, spec_planner::history::all_accepted) > 0.95);
  BOOST_TEST(p.calibrated(0, 0.5f, spec_planner::history::first_rejected) < 0.05);
  BOOST_TEST((p.plan(ps, ids) == std::vector<int32_t>{5, 0}));
  // Without the sequences, both are priced on the pooled chance and get the same drafts.
  const auto blind = p.plan(ps);
  BOOST_TEST(blind[0] == blind[1]);
}

BOOST_AUTO_TEST_CASE(confidences_are_recalibrated_by_what_verification_accepted) {
  spec_planner p{speculative_mode::variable};
  // Untried: the head's confidence as it is.
  BOOST_TEST(p.calibrated(0, 0.35f) == 0.35, boost::test_tools::tolerance(1e-6));
  // A head that says 0.35 where the first draft is accepted 9 times in 10, and the second (0.95)
  // only ever after an accepted first: the first position's 0.3-0.4 tenth moves towards 0.9.
  const auto q = with({0.35f, 0.95f});
  for (int i = 0; i < 200; ++i)
    p.observe_acceptance(q, 2, i % 10 == 0 ? 0 : 2);
  BOOST_TEST(p.calibrated(0, 0.35f) > 0.85);
  BOOST_TEST(p.calibrated(0, 0.35f) < 0.91);
  BOOST_TEST(p.calibrated(1, 0.95f) > 0.97);
  // A tenth never verified borrows from its position's acceptance (0.9 here); a position never
  // verified keeps the confidence.
  BOOST_TEST(p.calibrated(0, 0.15f) > 0.85);
  BOOST_TEST(p.calibrated(2, 0.35f) == 0.35, boost::test_tools::tolerance(1e-6));
  // The recalibrated confidence decides: with rows costing 0.1 of a step, a 0.35 first draft
  // would not be verified, a 0.9 one is.
  spec_planner raw{speculative_mode::variable};
  raw.set_curve({1.0, 0.5});
  p.set_curve({1.0, 0.5});
  const draft_proposal one[] = {with({0.35f}), with({}), with({}), with({})};
  BOOST_TEST(raw.plan(one)[0] == 0); // (exploration goes to request 1 on the first plan)
  BOOST_TEST(p.plan(one)[0] == 1);
}

BOOST_AUTO_TEST_CASE(the_cost_curve_is_fitted_from_observed_steps) {
  spec_planner p{speculative_mode::variable};
  for (int i = 0; i < 40; ++i) {
    const int64_t rows = 1 + i % 7 * 10;
    p.observe(rows, 0.002 + 0.0005 * static_cast<double>(rows));
  }
  const auto c = p.curve();
  BOOST_TEST(c.fixed == 0.002, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(c.per_row == 0.0005, boost::test_tools::tolerance(1e-6));
  // Steps that varied this much in rows fit the curve: no step is spent on probes.
  BOOST_TEST(p.identifiable());
  const draft_proposal ps[] = {with({0.99f, 0.99f})};
  for (uint64_t i = 0; i < 4 * spec_planner::probe_every; ++i)
    BOOST_TEST(p.plan(ps)[0] == 2);
}

BOOST_AUTO_TEST_CASE(a_planner_that_verifies_no_drafts_pauses_the_head_but_looks_again) {
  spec_planner p{speculative_mode::variable};
  BOOST_TEST(p.wants_proposals());
  // Rows as dear as a whole step: no draft is worth one.
  p.set_curve({0.0, 1.0});
  const draft_proposal useless[] = {with({0.3f, 0.3f}), with({0.3f, 0.3f})};
  for (int i = 0; i < 20; ++i)
    p.plan(useless);
  // Paused, except before every explore_every-th plan.
  int wanted = 0;
  const draft_proposal none[] = {with({}), with({})};
  for (uint64_t i = 0; i < 4 * spec_planner::look_again_every; ++i) {
    const bool w = p.wants_proposals();
    wanted += w;
    p.plan(w ? std::span<const draft_proposal>(useless) : std::span<const draft_proposal>(none));
  }
  BOOST_TEST(wanted == 4);
  // Drafts worth their rows again (cheap rows): the next offered step keeps the head running.
  p.set_curve({1.0, 1e-6});
  while (!p.wants_proposals())
    p.plan(none);
  p.plan(useless);
  BOOST_TEST(p.wants_proposals());
  // Fixed and off never change their minds.
  BOOST_TEST(spec_planner{speculative_mode::fixed}.wants_proposals());
  BOOST_TEST(!spec_planner{speculative_mode::off}.wants_proposals());
}

BOOST_AUTO_TEST_CASE(steps_of_one_row_count_are_probed_at_the_other_end) {
  // Every step so far verified 3 rows: the slope is unknown, so every probe_every-th plan is a
  // probe, plain when the plan would verify most drafts...
  spec_planner p{speculative_mode::variable};
  for (int i = 0; i < 20; ++i)
    p.observe(3, 0.004);
  BOOST_TEST(!p.identifiable());
  const draft_proposal likely[] = {with({0.99f, 0.99f})};
  int plain = 0;
  for (uint64_t i = 0; i < 4 * spec_planner::probe_every; ++i)
    plain += p.plan(likely)[0] == 0;
  BOOST_TEST(plain == 4);
  // ... and with every draft when it would verify few.
  spec_planner q{speculative_mode::variable};
  for (int i = 0; i < 20; ++i)
    q.observe(1, 0.004);
  const draft_proposal unlikely[] = {with({0.01f, 0.01f, 0.01f})};
  int full = 0;
  for (uint64_t i = 0; i < 4 * spec_planner::probe_every; ++i)
    full += q.plan(unlikely)[0] == 3;
  BOOST_TEST(full == 4);
  // Once the probes' rows are observed the curve is known and probing stops.
  for (int i = 0; i < 5; ++i)
    q.observe(4, 0.0055);
  BOOST_TEST(q.identifiable());
}

namespace {
// Steps of fewest sequences (one per 6 rows), as a tiny-model profile measures them on a CPU: rows
// get cheaper the more of them share the weights' reads (10 ms at 8 rows, 15 at 16, 29 at 48).
std::vector<verify_cost_point> cpu_profile() {
  return {{1, 1, 0.008}, {2, 8, 0.010}, {2, 9, 0.0127}, {3, 16, 0.015}, {8, 48, 0.029}};
}
} // namespace

BOOST_AUTO_TEST_CASE(a_profiled_curve_prices_rows_the_rank_never_ran) {
  // The rank only ever ran steps of 8 rows; on the profiled curve all five drafts of eight
  // requests (first 0.6, then 0.95 each) pay, every step: no probe and no far probe interrupts.
  std::vector<draft_proposal> ps(8, with({0.6f, 0.95f, 0.95f, 0.95f, 0.95f}));
  spec_planner profiled{speculative_mode::variable};
  auto points = cpu_profile();
  points.push_back({8, 8, 0.010}); // eight sequences cost what two do here
  profiled.set_verify_costs(points);
  for (int i = 0; i < 30; ++i)
    profiled.observe(8, 0.010, 8);
  BOOST_TEST(*profiled.priced(8, 8) == 0.010, boost::test_tools::tolerance(1e-9));
  for (uint64_t i = 0; i < 4 * spec_planner::max_probe_interval; ++i)
    BOOST_TEST((profiled.plan(ps) == std::vector<int32_t>(8, 5)));
  // A curve where a row costs as much as a request's whole step: no draft pays, and in 32 plans
  // none is verified; a probe would verify all.
  spec_planner dear{speculative_mode::variable};
  dear.set_verify_costs({{1, 1, 0.001}, {8, 8, 0.008}, {8, 48, 0.048}});
  int drafted = 0;
  for (uint64_t i = 0; i < 4 * spec_planner::look_again_every; ++i) {
    for (auto k : dear.plan(ps))
      drafted += k;
    dear.observe(8, 0.008, 8);
  }
  BOOST_TEST(drafted == 0);
  // Without a profile there is no price from one.
  BOOST_TEST(!spec_planner{speculative_mode::variable}.priced(1, 1).has_value());
}

BOOST_AUTO_TEST_CASE(a_sequence_costs_more_than_a_draft_row) {
  // One row per sequence costs 0.5 ms a sequence more than the same rows as drafts: 48 rows of
  // 48 sequences take 29 + 40 x 0.5 ms. A batch of 48 pays that for its sequences whatever it
  // drafts, and its drafts cost what the fewest-sequence curve adds per row.
  auto points = cpu_profile();
  points.push_back({16, 16, 0.015 + 13 * 0.0005});
  points.push_back({48, 48, 0.029 + 40 * 0.0005});
  spec_planner p{speculative_mode::variable};
  p.set_verify_costs(points);
  BOOST_TEST(*p.priced(48, 48) == 0.049, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(*p.priced(16, 16) == 0.0215, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(*p.priced(8, 48) == 0.029, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(*p.priced(10, 48) == 0.030, boost::test_tools::tolerance(1e-9));
  // Past the rows measured: the upper half's slope.
  BOOST_TEST(*p.priced(16, 96) > *p.priced(8, 48));
}

BOOST_AUTO_TEST_CASE(the_rank_s_own_steps_correct_the_profile) {
  spec_planner p{speculative_mode::variable};
  p.set_verify_costs(cpu_profile());
  // Steps of one size that all take 5 ms more than profiled (longer contexts): the profile is
  // shifted, not scaled, so a draft row still costs what the profile says.
  for (int i = 0; i < 60; ++i)
    p.observe(16, 0.020, 3);
  BOOST_TEST(*p.priced(3, 16) == 0.020, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(*p.priced(8, 48) - *p.priced(3, 16) == 0.014, boost::test_tools::tolerance(1e-6));
  // Steps of many sizes, all twice the profile (a machine twice as slow): the fit sees it, within
  // what the prior's pull towards b = 1 leaves (b = 1.5 from these five sizes, 2 - 29 ms).
  for (int i = 0; i < 200; ++i) {
    const auto q = cpu_profile()[static_cast<std::size_t>(i % 5)];
    p.observe(q.rows, 2 * q.seconds, q.seqs);
  }
  BOOST_TEST(*p.priced(8, 48) - *p.priced(2, 8) > 1.4 * (0.029 - 0.010));
  BOOST_TEST(*p.priced(8, 48) == 0.058, boost::test_tools::tolerance(0.15));
  BOOST_TEST(*p.priced(2, 8) == 0.020, boost::test_tools::tolerance(0.25));
  // A curve with a dip (noise) is read as never falling.
  spec_planner dip{speculative_mode::variable};
  dip.set_verify_costs({{1, 1, 0.010}, {1, 4, 0.008}, {2, 8, 0.012}});
  BOOST_TEST(*dip.priced(1, 4) == 0.010, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(the_head_is_paused_while_its_drafts_bring_less_than_its_pass_costs) {
  // The head's pass is 0.5 ms of a sequence's 1.25 ms step (steps with it paused measured too).
  // Drafts accepted 0.5 at each position pay for their rows against a step that ran the head
  // anyway, so the plan takes some; but steps without drafts and without the head are faster.
  std::vector<verify_cost_point> points{{1, 1, 0.00125}, {8, 8, 0.010}, {8, 8, 0.006, false}, {8, 16, 0.0145},
                                        {8, 48, 0.032}};
  spec_planner p{speculative_mode::variable};
  p.set_verify_costs(points);
  std::vector<draft_proposal> ps(8, with({0.9f, 0.9f, 0.9f, 0.9f, 0.9f}));
  BOOST_TEST(p.wants_proposals());
  const auto plan = p.plan(ps);
  BOOST_TEST(plan[0] > 0); // worth it against 10 ms steps...
  BOOST_TEST(!p.wants_proposals()); // ... not against 6 ms ones
  // Paused, it looks again before every look_again_every-th plan.
  const std::vector<draft_proposal> none(8);
  int looks = 0;
  for (uint64_t i = 0; i < 2 * spec_planner::look_again_every; ++i) {
    const bool w = p.wants_proposals();
    looks += w;
    p.plan(w ? std::span<const draft_proposal>(ps) : std::span<const draft_proposal>(none));
  }
  BOOST_TEST(looks == 2);
  // Drafts that are nearly always accepted beat the bare steps: one look resumes the head.
  std::vector<draft_proposal> good(8, with({0.99f, 0.99f, 0.99f, 0.99f, 0.99f}));
  while (!p.wants_proposals())
    p.plan(none);
  p.plan(good);
  BOOST_TEST(p.wants_proposals());
}

BOOST_AUTO_TEST_SUITE_END()
