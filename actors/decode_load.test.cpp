#include "actors/decode_load.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::actors;

BOOST_AUTO_TEST_SUITE(decode_load_tests)

BOOST_AUTO_TEST_CASE(leases_spread_requests_and_release_on_destruction) {
  auto table = std::make_shared<decode_load>(2, deepinfer::balancers::decode_balancer::config{});
  auto a = decode_load::assign(table, 1000);
  BOOST_REQUIRE(a);
  BOOST_TEST(a->rank() == 0u);  // ties go to the lowest index
  auto b = decode_load::assign(table, 1000);
  BOOST_REQUIRE(b);
  BOOST_TEST(b->rank() == 1u);  // the idle rank wins over the loaded one
  auto load = table->snapshot();
  BOOST_TEST(load[0].requests == 1);
  BOOST_TEST(load[1].kv_tokens == 1000);
  a.reset();
  b.reset();
  load = table->snapshot();
  BOOST_TEST(load[0].requests == 0);
  BOOST_TEST(load[0].kv_tokens == 0);
  BOOST_TEST(load[1].requests == 0);
  BOOST_TEST(load[1].kv_tokens == 0);
}

BOOST_AUTO_TEST_CASE(full_ranks_get_no_lease) {
  deepinfer::balancers::decode_balancer::config cfg;
  cfg.max_batch = 1;
  auto table = std::make_shared<decode_load>(1, cfg);
  auto a = decode_load::assign(table, 10);
  BOOST_REQUIRE(a);
  BOOST_TEST(!decode_load::assign(table, 10));
  a.reset();
  BOOST_TEST(static_cast<bool>(decode_load::assign(table, 10)));
}

BOOST_AUTO_TEST_SUITE_END()
