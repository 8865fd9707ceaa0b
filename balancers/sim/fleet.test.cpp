#include "balancers/sim/fleet.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::balancers::sim;

BOOST_AUTO_TEST_SUITE(fleet_suite)

BOOST_AUTO_TEST_CASE(a_ready_pool_machine_serves_sooner_than_a_cold_one_and_the_pool_refills) {
  fleet f({.prefill_dp = 2, .decode_dp = 4, .ready_pool = 1, .from_pool_s = 10.0, .cold_s = 100.0});
  f.seed(instance_role::prefill, 1, 0.0);
  f.fill_pool(0.0);
  const auto a = f.add(instance_role::prefill, 5.0);
  BOOST_TEST(a.from_pool);
  BOOST_TEST(a.ready_at == 15.0);
  BOOST_TEST(a.slot == 1);
  // The pool is empty until its refill's cold start ends at 105: the next one starts cold.
  const auto b = f.add(instance_role::decode, 6.0);
  BOOST_TEST(!b.from_pool);
  BOOST_TEST(b.ready_at == 106.0);
  BOOST_TEST(f.count(instance_role::prefill, instance_state::provisioning) == 1);
  f.ready(instance_role::prefill, a.slot, 15.0);
  BOOST_TEST(f.count(instance_role::prefill, instance_state::running) == 2);
  BOOST_TEST(f.pool_ready(104.0) == 0);
  BOOST_TEST(f.pool_ready(105.0) == 1);
  BOOST_TEST(f.pool_starts() == 1);
  BOOST_TEST(f.cold_starts() == 2); // the refill for the machine taken, and the decode (the refill covers the pool)
}

BOOST_AUTO_TEST_CASE(rank_seconds_integrate_every_state_but_gone_and_the_pool_apart) {
  fleet f({.prefill_dp = 2, .decode_dp = 4, .ready_pool = 1, .from_pool_s = 10.0, .cold_s = 100.0});
  f.seed(instance_role::decode, 1, 0.0); // 4 ranks from 0
  f.fill_pool(0.0);                      // one machine of max(2, 4) = 4 ranks
  const auto a = f.add(instance_role::prefill, 10.0); // 2 ranks from 10 (provisioning counts)
  f.ready(instance_role::prefill, a.slot, 20.0);
  f.drain(instance_role::prefill, a.slot, 30.0);
  f.leave(instance_role::prefill, a.slot, 40.0); // goes back to the pool, cancelling the refill
  BOOST_TEST(f.rank_seconds(instance_role::decode, 100.0) == 400.0);
  BOOST_TEST(f.rank_seconds(instance_role::prefill, 100.0) == 60.0);
  BOOST_TEST(f.instance_rank_seconds(100.0) == 460.0);
  // pool: 1 machine all along (the ready one, then the refill booting, then the returned one)
  BOOST_TEST(f.pool_rank_seconds(100.0) == 400.0);
  BOOST_TEST((f.state(instance_role::prefill, a.slot) == instance_state::gone));
  // the gone slot is reused
  BOOST_TEST(f.add(instance_role::prefill, 100.0).slot == a.slot);
}

BOOST_AUTO_TEST_SUITE_END()
