#include "balancers/cost_model.hpp"

#include <boost/test/unit_test.hpp>

using deepinfer::balancers::cost_model;

BOOST_AUTO_TEST_SUITE(cost_model_suite)

BOOST_AUTO_TEST_CASE(cost_adds_overhead_linear_cross_and_quadratic_terms) {
  const cost_model m({.a = 0.01, .b = 1e-4, .c2 = 1e-8, .d = 1e-8});
  // 0.01 + 1e-4*1000 + 1e-8*1000*5000 + 1e-8*1000^2 = 0.01 + 0.1 + 0.05 + 0.01
  BOOST_TEST(m.cost(1000, 5000) == 0.17, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(m.cost(0, 5000) == 0.0);
}

BOOST_AUTO_TEST_CASE(solver_returns_the_largest_q_within_the_budget) {
  const cost_model m({.a = 0.01, .b = 1e-4, .c2 = 1e-8, .d = 1e-8});
  // 1e-8 q^2 + 1e-4 q = 1  ->  q = (-1e-4 + sqrt(5e-8)) / 2e-8 = 6180.34
  BOOST_TEST(m.max_tokens(1.0, 0) == 6180);
  // c = 10000: linear term 2e-4  ->  q = (-2e-4 + sqrt(8e-8)) / 2e-8 = 4142.13
  BOOST_TEST(m.max_tokens(1.0, 10000) == 4142);
  BOOST_TEST(m.marginal(4142, 10000) <= 1.0);
  BOOST_TEST(m.marginal(4143, 10000) > 1.0);
  BOOST_TEST(m.max_tokens(0.0, 0) == 0);
  BOOST_TEST(m.max_tokens(-1.0, 0) == 0);
}

BOOST_AUTO_TEST_CASE(solver_handles_a_purely_linear_model) {
  const cost_model m({.a = 0.0, .b = 0.25, .c2 = 0.0, .d = 0.0});
  BOOST_TEST(m.max_tokens(0.5, 100) == 2);
  BOOST_TEST(m.max_tokens(0.74, 100) == 2);
}

BOOST_AUTO_TEST_CASE(calibration_meets_both_design_throughputs) {
  const cost_model m(cost_model::calibrate({}));
  // DESIGN §9: 60K tok/s uncached and 1.5M tok/s counting hits, for a 77K prompt at 96 % hits.
  BOOST_TEST(77000.0 / m.cost(77000, 0) == 60e3, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(77000.0 / m.cost(3080, 73920) == 1.5e6, boost::test_tools::tolerance(1e-9));
  const auto& k = m.coefficients();
  BOOST_TEST(k.b > 0.0);
  BOOST_TEST(k.c2 > 0.0);
  BOOST_TEST(k.d * 77000.0 * 77000.0 / m.cost(77000, 0) == 0.25, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_SUITE_END()
