// spec_planner: fixed verifies every draft; variable takes drafts best expected gain first and
// stops where the next one costs more time than its expected tokens bring.
#include <boost/test/unit_test.hpp>

#include "engine/spec_planner.hpp"

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
  // Rows as dear as the whole step: none is...
  p.set_curve({0.0, 1.0});
  for (uint64_t i = 3; i < spec_planner::explore_every; ++i)
    BOOST_TEST((p.plan(ps) == std::vector<int32_t>{0, 0}));
  // ... except one draft of one request in turn every explore_every plans (exploration).
  BOOST_TEST((p.plan(ps) == std::vector<int32_t>{0, 1}));
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
  for (uint64_t i = 0; i < 4 * spec_planner::explore_every; ++i) {
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

BOOST_AUTO_TEST_SUITE_END()
