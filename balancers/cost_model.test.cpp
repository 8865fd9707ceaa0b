#include "balancers/cost_model.hpp"

#include <cmath>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace deepinfer::balancers;

BOOST_AUTO_TEST_SUITE(cost_model_suite)

BOOST_AUTO_TEST_CASE(fit_recovers_a_known_quadratic_and_the_solve_respects_the_budget) {
  // ns = 2e5 + 3e4 q + 5 q c + 20 q^2, finish = 1e6 + 100 c.
  std::vector<cost_model::sample> s;
  std::vector<cost_model::finish_sample> f;
  for (int64_t q : {16, 64, 256, 1024})
    for (int64_t c : {0, 1000, 8000, 30000})
      s.push_back({q, c, 2e5 + 3e4 * q + 5.0 * q * c + 20.0 * q * q});
  for (int64_t c : {0, 5000, 20000})
    f.push_back({c, 1e6 + 100.0 * c});
  auto m = cost_model::fit(s, f);
  BOOST_REQUIRE(m);
  const auto& k = m->coefficients();
  BOOST_TEST(k.a0 == 2e-4, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(k.a2 == 5e-9, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(k.a3 == 20e-9, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(k.f1 == 100e-9, boost::test_tools::tolerance(1e-9));
  for (double budget : {1e6, 1e7, 5e7})
    for (int64_t c : {0, 4000, 20000}) {
      int64_t q = m->max_tokens(c, budget, 1 << 20);
      BOOST_TEST(m->predict(q, c) <= budget);
      BOOST_TEST(m->predict(q + 1, c) > budget);
    }
  BOOST_TEST(m->max_tokens(0, 1e12, 300) == 300); // everything fits, finish included
  auto back = cost_model::from_json(m->to_json());
  BOOST_REQUIRE(back);
  BOOST_TEST(back->coefficients().a3 == k.a3, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_term_the_samples_make_negative_is_dropped_and_the_rest_refitted) {
  // No dependence on c, plus noise that pulls the cross term below zero: the fit keeps it at 0
  // (a quota that fell with the prefix would send long prompts to busy ranks).
  std::vector<cost_model::sample> s;
  int i = 0;
  for (int64_t q : {32, 128, 512, 1024})
    for (int64_t c : {0, 2048, 4096}) {
      const double noise = (c == 4096 ? 0.97 : 1.0) * (++i % 2 ? 1.01 : 0.99);
      s.push_back({q, c, (1e7 + 1e5 * q) * noise});
    }
  auto m = cost_model::fit(s, {});
  BOOST_REQUIRE(m);
  const auto& k = m->coefficients();
  BOOST_TEST(k.a2 == 0.0);
  for (double v : {k.a0, k.a1, k.a3})
    BOOST_TEST(v >= 0.0);
  BOOST_TEST(k.a1 == 1e-4, boost::test_tools::tolerance(0.05));
}

BOOST_AUTO_TEST_CASE(underdetermined_samples_do_not_fit) {
  std::vector<cost_model::sample> s{{16, 0, 1e5}};
  BOOST_TEST(!cost_model::fit(s, {}).has_value());
  BOOST_TEST(!cost_model::from_json("{\"a0\": 1, \"a1\": -1, \"a2\": 0, \"a3\": 0}").has_value());
  BOOST_TEST(!cost_model::from_json("not json").has_value());
}

BOOST_AUTO_TEST_CASE(cost_adds_overhead_linear_cross_quadratic_and_finishing_terms) {
  const cost_model m({.a0 = 0.01, .a1 = 1e-4, .a2 = 1e-8, .a3 = 1e-8});
  // 0.01 + 1e-4*1000 + 1e-8*1000*5000 + 1e-8*1000^2 = 0.01 + 0.1 + 0.05 + 0.01
  BOOST_TEST(m.cost(1000, 5000) == 0.17, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(m.cost(0, 5000) == 0.0);
  const cost_model f({.a0 = 0.01, .a1 = 1e-4, .f0 = 0.1, .f1 = 1e-6});
  // + 0.1 + 1e-6 * (5000 + 1000)
  BOOST_TEST(f.cost(1000, 5000) == 0.216, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(f.cost(1000, 5000) * 1e9 == f.predict(1000, 5000, true), boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(solver_returns_the_largest_q_within_the_budget) {
  const cost_model m({.a0 = 0.01, .a1 = 1e-4, .a2 = 1e-8, .a3 = 1e-8});
  // 1e-8 q^2 + 1e-4 q = 1  ->  q = (-1e-4 + sqrt(5e-8)) / 2e-8 = 6180.34
  BOOST_TEST(m.marginal_tokens(1.0, 0) == 6180);
  // c = 10000: linear term 2e-4  ->  q = (-2e-4 + sqrt(8e-8)) / 2e-8 = 4142.13
  BOOST_TEST(m.marginal_tokens(1.0, 10000) == 4142);
  BOOST_TEST(m.marginal(4142, 10000) <= 1.0);
  BOOST_TEST(m.marginal(4143, 10000) > 1.0);
  BOOST_TEST(m.marginal_tokens(0.0, 0) == 0);
  BOOST_TEST(m.marginal_tokens(-1.0, 0) == 0);
  // The step solve counts the overhead: 1.01 s of budget leaves 1 s for the tokens.
  BOOST_TEST(m.max_tokens(0, 1.01e9, 1 << 20) == 6180);
}

BOOST_AUTO_TEST_CASE(solver_handles_a_purely_linear_model) {
  const cost_model m({.a1 = 0.25});
  BOOST_TEST(m.marginal_tokens(0.5, 100) == 2);
  BOOST_TEST(m.marginal_tokens(0.74, 100) == 2);
}

BOOST_AUTO_TEST_CASE(calibration_meets_both_design_throughputs) {
  const auto m = cost_model::calibrate({});
  // DESIGN §9: 60K tok/s uncached and 1.5M tok/s counting hits, for a 77K prompt at 96 % hits.
  BOOST_TEST(77000.0 / m.cost(77000, 0) == 60e3, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(77000.0 / m.cost(3080, 73920) == 1.5e6, boost::test_tools::tolerance(1e-9));
  const auto& k = m.coefficients();
  BOOST_TEST(k.a1 > 0.0);
  BOOST_TEST(k.a2 > 0.0);
  BOOST_TEST(k.a3 * 77000.0 * 77000.0 / m.cost(77000, 0) == 0.25, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_SUITE_END()
