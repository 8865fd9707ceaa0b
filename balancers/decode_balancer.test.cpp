#include "balancers/decode_balancer.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using deepinfer::balancers::decode_balancer;
using rank_state = decode_balancer::rank_state;

BOOST_AUTO_TEST_SUITE(decode_balancer_suite)

// A: few requests, large KV; B: many requests, small KV; C: in between.
const std::vector<rank_state> crafted{{2, 100000}, {10, 20000}, {6, 60000}};

BOOST_AUTO_TEST_CASE(short_request_goes_to_few_requests_even_with_large_kv) {
  const decode_balancer d({});
  // means after placing: n = 19/3, kv = 181000/3.
  // A: 5/40.11 + 2.01e8/3.640e9 = 0.180; B: 21/40.11 + 4.1e7/3.640e9 = 0.535; C: 0.357
  const double mn = 19.0 / 3.0;
  const double mk = 181000.0 / 3.0;
  BOOST_TEST(decode_balancer::score(crafted[0], 1000, mn, mk) == 0.1799, boost::test_tools::tolerance(1e-3));
  BOOST_TEST(decode_balancer::score(crafted[1], 1000, mn, mk) == 0.5348, boost::test_tools::tolerance(1e-3));
  BOOST_TEST(decode_balancer::score(crafted[2], 1000, mn, mk) == 0.3573, boost::test_tools::tolerance(1e-3));
  BOOST_TEST(d.choose(crafted, 1000).value() == 0);
}

BOOST_AUTO_TEST_CASE(long_request_goes_to_the_smallest_kv_total) {
  const decode_balancer d({});
  // kv mean 380000/3: A 0.125 + 8e10/1.604e10 = 5.11; B 0.524 + 4.8e10/1.604e10 = 3.52; C 4.31
  BOOST_TEST(d.choose(crafted, 200000).value() == 1);
}

BOOST_AUTO_TEST_CASE(full_ranks_are_skipped_and_none_fitting_is_nullopt) {
  const decode_balancer d({.max_batch = 10, .max_kv_tokens = 300000});
  // B holds 10 requests already: the long request falls to C (4.31 < 5.11).
  BOOST_TEST(d.choose(crafted, 200000).value() == 2);
  const decode_balancer tiny({.max_batch = 10, .max_kv_tokens = 50000});
  BOOST_TEST(!tiny.choose(crafted, 200000).has_value());
  BOOST_TEST(!d.choose(std::vector<rank_state>{}, 10).has_value());
}

BOOST_AUTO_TEST_CASE(empty_cluster_fills_ranks_in_turn) {
  const decode_balancer d({});
  std::vector<rank_state> ranks(3);
  for (int i = 0; i < 6; ++i) {
    const int r = d.choose(ranks, 1000).value();
    BOOST_TEST(r == i % 3);
    ranks[static_cast<size_t>(r)].requests += 1;
    ranks[static_cast<size_t>(r)].kv_tokens += 1000;
  }
}

BOOST_AUTO_TEST_SUITE_END()
