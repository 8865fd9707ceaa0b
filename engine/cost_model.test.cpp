#include "engine/cost_model.hpp"

#include <cmath>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace deepinfer::engine;

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
  BOOST_TEST(std::fabs(m->a2 - 5.0) < 1e-6);
  BOOST_TEST(std::fabs(m->a3 - 20.0) < 1e-6);
  BOOST_TEST(std::fabs(m->f1 - 100.0) < 1e-6);
  for (double budget : {1e6, 1e7, 5e7})
    for (int64_t c : {0, 4000, 20000}) {
      int64_t q = m->max_tokens(c, budget, 1 << 20);
      BOOST_TEST(m->predict(q, c) <= budget);
      BOOST_TEST(m->predict(q + 1, c) > budget);
    }
  BOOST_TEST(m->max_tokens(0, 1e12, 300) == 300); // everything fits, finish included
  auto back = cost_model::from_json(m->to_json());
  BOOST_REQUIRE(back);
  BOOST_TEST(back->a3 == m->a3);
}

BOOST_AUTO_TEST_CASE(underdetermined_samples_do_not_fit) {
  std::vector<cost_model::sample> s{{16, 0, 1e5}};
  BOOST_TEST(!cost_model::fit(s, {}).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
