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
  // Rows as dear as the whole step: none is.
  p.set_curve({0.0, 1.0});
  BOOST_TEST((p.plan(ps) == std::vector<int32_t>{0, 0}));
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
  // Without a set curve, every probe_every-th plan is a plain step (a probe of the fixed part).
  const draft_proposal ps[] = {with({0.99f, 0.99f})};
  int plain = 0;
  for (uint64_t i = 0; i < 4 * spec_planner::probe_every; ++i)
    plain += p.plan(ps)[0] == 0;
  BOOST_TEST(plain == 4);
}

BOOST_AUTO_TEST_SUITE_END()
