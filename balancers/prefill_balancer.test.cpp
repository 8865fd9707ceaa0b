#include "balancers/prefill_balancer.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>

using deepinfer::balancers::prefill_balancer;

BOOST_AUTO_TEST_SUITE(prefill_balancer_suite)

BOOST_AUTO_TEST_CASE(buckets_follow_the_16k_64k_256k_bounds) {
  const prefill_balancer b({});
  BOOST_TEST(b.bucket_of(16383) == 0);
  BOOST_TEST(b.bucket_of(16384) == 1);
  BOOST_TEST(b.bucket_of(65535) == 1);
  BOOST_TEST(b.bucket_of(65536) == 2);
  BOOST_TEST(b.bucket_of(262143) == 2);
  BOOST_TEST(b.bucket_of(262144) == 3);
}

BOOST_AUTO_TEST_CASE(divide_gives_one_engine_per_demanding_bucket_then_largest_remainder) {
  // 8 engines, demand 10/30/60/0: floors 1,1,1,0 leave 5; exact shares 0.5, 1.5, 3.0 -> 0,1,3
  // plus one left for the first of the two 0.5 remainders.
  const auto c = prefill_balancer::divide({10, 30, 60, 0}, 8);
  BOOST_TEST(c[0] == 2);
  BOOST_TEST(c[1] == 2);
  BOOST_TEST(c[2] == 4);
  BOOST_TEST(c[3] == 0);
  const auto even = prefill_balancer::divide({0, 0, 0, 0}, 8);
  BOOST_TEST((even == std::array<int, 4>{2, 2, 2, 2}));
  const auto one = prefill_balancer::divide({1, 0, 0, 0}, 8);
  BOOST_TEST((one == std::array<int, 4>{8, 0, 0, 0}));
  // fewer engines than demanding buckets: no floor, pure shares (0.3*2, 0.3*2, 0.4*2)
  const auto few = prefill_balancer::divide({3, 3, 4, 0}, 2);
  BOOST_TEST(few[0] + few[1] + few[2] + few[3] == 2);
  BOOST_TEST(few[2] == 1);
}

BOOST_AUTO_TEST_CASE(new_round_redivides_engines_by_last_round_demand_share) {
  prefill_balancer b({.engines = 8, .ranks_per_engine = 1, .quota_per_rank_s = 100.0});
  auto count = [&](int bucket) {
    return std::count(b.engine_bucket().begin(), b.engine_bucket().end(), bucket);
  };
  BOOST_TEST(count(0) == 2);
  BOOST_TEST(count(3) == 2);
  b.submit({1, 1000, 10.0});    // bucket 0
  b.submit({2, 20000, 30.0});   // bucket 1
  b.submit({3, 100000, 60.0});  // bucket 2
  b.new_round();
  BOOST_TEST(count(0) == 2);
  BOOST_TEST(count(1) == 2);
  BOOST_TEST(count(2) == 4);
  BOOST_TEST(count(3) == 0);
  // a round with no demand at all falls back to the even split
  b.new_round();
  BOOST_TEST(count(3) == 2);
}

BOOST_AUTO_TEST_CASE(engines_pull_by_remaining_quota_and_ranks_by_lowest_load) {
  // 2 engines x 2 ranks, 1 s of quota per rank: engine 0 serves bucket 0, engine 1 bucket 1.
  prefill_balancer b({.engines = 2, .ranks_per_engine = 2, .quota_per_rank_s = 1.0});
  BOOST_TEST((b.engine_bucket() == std::vector<int>{0, 1}));
  for (const auto& [id, q] : std::vector<std::pair<uint64_t, double>>{{1, 0.5}, {2, 0.7}, {3, 0.4}, {4, 0.6}, {5, 0.3}})
    b.submit({id, 1000, q});
  const auto a = b.dispatch();
  // engine 0 (2.0 left): 1->r0 (.5), 2->r1 (.7), 3->r0 (.9), 4->r1 (1.3), quota exhausted;
  // job 5 is taken by engine 1, whose own bucket is empty.
  BOOST_TEST_REQUIRE(a.size() == 5u);
  BOOST_TEST((a[0].engine == 0 && a[0].rank == 0));
  BOOST_TEST((a[1].engine == 0 && a[1].rank == 1));
  BOOST_TEST((a[2].engine == 0 && a[2].rank == 0));
  BOOST_TEST((a[3].engine == 0 && a[3].rank == 1));
  BOOST_TEST((a[4].id == 5u && a[4].engine == 1 && a[4].rank == 0));
  BOOST_TEST(b.rank_load(0, 0) == 0.9, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(b.rank_load(0, 1) == 1.3, boost::test_tools::tolerance(1e-12));
  // engine 0 is over quota: engine 1 (own bucket empty) lends itself, lowest rank 1
  b.submit({6, 1000, 0.2});
  const auto lent = b.dispatch();
  BOOST_TEST_REQUIRE(lent.size() == 1u);
  BOOST_TEST((lent[0].engine == 1 && lent[0].rank == 1));
  // freeing quota lets engine 0 pull again: 2.0 - (0.9 + 0.6) = 0.5 left, rank 1 is lower
  b.complete(0, 1, 0.7);
  b.submit({7, 1000, 0.1});
  const auto again = b.dispatch();
  BOOST_TEST_REQUIRE(again.size() == 1u);
  BOOST_TEST((again[0].id == 7u && again[0].engine == 0 && again[0].rank == 1));
}

BOOST_AUTO_TEST_CASE(a_busy_engine_with_an_empty_own_bucket_still_lends_its_remaining_quota) {
  prefill_balancer b({.engines = 2, .ranks_per_engine = 1, .quota_per_rank_s = 1.0});
  b.submit({1, 20000, 0.4}); // bucket 1 -> engine 1
  BOOST_TEST(b.dispatch().size() == 1u);
  b.submit({2, 1000, 1.5});  // engine 0 takes it and is over quota
  b.submit({3, 1000, 0.2});  // engine 0 has no quota left: engine 1 (0.6 left) lends itself
  const auto a = b.dispatch();
  BOOST_TEST_REQUIRE(a.size() == 2u);
  BOOST_TEST((a[0].id == 2u && a[0].engine == 0));
  BOOST_TEST((a[1].id == 3u && a[1].engine == 1));
}

BOOST_AUTO_TEST_CASE(without_stealing_a_bucket_waits_for_its_own_engines) {
  prefill_balancer b({.engines = 2, .ranks_per_engine = 1, .quota_per_rank_s = 1.0, .lend_when_own_bucket_empty = false});
  b.submit({1, 1000, 1.5});
  b.submit({2, 1000, 0.1});
  const auto a = b.dispatch();
  BOOST_TEST(a.size() == 1u);
  BOOST_TEST(b.queued(0) == 1u);
}

// With a reserve, a short prompt that finds no engine with room overruns a quota by up to the
// reserve instead of waiting at the balancer until an engine runs dry; an engine with room, its
// own bucket's or a lender, still comes first, and a job priced over the reserve never overruns.
BOOST_AUTO_TEST_CASE(whole_job_fits_lets_short_prompts_overrun_a_quota_by_the_reserve_when_no_engine_has_room) {
  prefill_balancer b({.engines = 2, .ranks_per_engine = 1, .quota_per_rank_s = 0.5, .whole_job_fits = true,
                      .short_reserve_s = 0.1});
  BOOST_TEST((b.engine_bucket() == std::vector<int>{0, 1}));
  b.submit({1, 20000, 0.5});
  b.submit({2, 20000, 0.5});
  auto a = b.dispatch();
  BOOST_TEST_REQUIRE(a.size() == 2u); // engine 1 takes one, engine 0 lends itself to the other
  auto engine_of = [&](uint64_t id) {
    auto it = std::find_if(a.begin(), a.end(), [&](const auto& x) { return x.id == id; });
    return it == a.end() ? -1 : it->engine;
  };
  b.submit({3, 1000, 0.2}); // over the reserve: waits like a long one
  BOOST_TEST(b.dispatch().empty());
  BOOST_TEST(b.withdraw(3));
  for (uint64_t id = 4; id <= 8; ++id)
    b.submit({id, 1000, 0.04});
  a = b.dispatch();
  // Own engine first (0.54, then 0.58 s held: up to 0.6), then the lender (the same); the last waits.
  BOOST_TEST_REQUIRE(a.size() == 4u);
  BOOST_TEST(engine_of(4) == 0);
  BOOST_TEST(engine_of(5) == 0);
  BOOST_TEST(engine_of(6) == 1);
  BOOST_TEST(engine_of(7) == 1);
  BOOST_TEST(b.queued(0) == 1u);
  BOOST_TEST(b.engine_load(0) == 0.58, boost::test_tools::tolerance(1e-9));
  // Engine 1's long prompt finishes: it has room, so the waiting short prompt goes there, and so
  // does the next one, though engine 0's reserve is not spent.
  b.complete(1, 0, 0.5);
  a = b.dispatch();
  BOOST_TEST_REQUIRE(a.size() == 1u);
  BOOST_TEST(engine_of(8) == 1);
  b.complete(0, 0, 0.04);
  b.submit({9, 1000, 0.04});
  a = b.dispatch();
  BOOST_TEST_REQUIRE(a.size() == 1u);
  BOOST_TEST(engine_of(9) == 1);
}

// The reserve is counted apart from the engine's other jobs: a long prompt priced over quota and
// reserve together (taken because the engine held nothing) still leaves the reserve to short
// prompts, which otherwise waited until a long prompt ended (bench/RESULTS.md, "the mixed-length
// load, eight arrival sequences"). Short prompts that end give their reserve back.
BOOST_AUTO_TEST_CASE(whole_job_fits_keeps_the_reserve_beside_a_long_prompt_priced_over_the_quota) {
  prefill_balancer b({.engines = 2, .ranks_per_engine = 1, .quota_per_rank_s = 0.5, .whole_job_fits = true,
                      .short_reserve_s = 0.1});
  b.submit({1, 20000, 0.8});
  b.submit({2, 20000, 0.8});
  BOOST_TEST_REQUIRE(b.dispatch().size() == 2u);
  for (uint64_t id = 3; id <= 8; ++id)
    b.submit({id, 1000, 0.04});
  auto a = b.dispatch();
  BOOST_TEST_REQUIRE(a.size() == 4u); // two on each engine's reserve (0.08 of 0.1); two wait
  for (const auto& x : a)
    BOOST_TEST(x.reserve);
  BOOST_TEST(b.engine_load(0) == 0.88, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(b.queued(0) == 2u);
  b.complete(a[0].engine, a[0].rank, a[0].quota, true); // one ends: its engine takes the next
  const auto next = b.dispatch();
  BOOST_TEST_REQUIRE(next.size() == 1u);
  BOOST_TEST(next[0].engine == a[0].engine);
  BOOST_TEST(b.queued(0) == 1u);
  // Without the reserve flag the short prompt's quota leaves the load but not the reserve.
  b.complete(next[0].engine, next[0].rank, next[0].quota);
  BOOST_TEST(b.dispatch().empty());
}

BOOST_AUTO_TEST_CASE(whole_job_fits_keeps_a_second_long_prompt_at_the_balancer_for_the_engine_that_runs_dry) {
  // Engine 0 serves short prompts, engine 1 long ones; a long prompt costs 0.5 s, the quota is 0.5 s.
  for (const bool whole : {false, true}) {
    BOOST_TEST_CONTEXT("whole_job_fits " << whole) {
      prefill_balancer b({.engines = 2, .ranks_per_engine = 1, .quota_per_rank_s = 0.5, .whole_job_fits = whole});
      BOOST_TEST((b.engine_bucket() == std::vector<int>{0, 1}));
      b.submit({1, 1000, 0.01}); // a short one keeps engine 0 busy but not idle
      b.submit({2, 20000, 0.5});
      b.submit({3, 20000, 0.5});
      const auto a = b.dispatch();
      auto engine_of = [&](uint64_t id) {
        auto it = std::find_if(a.begin(), a.end(), [&](const auto& x) { return x.id == id; });
        return it == a.end() ? -1 : it->engine;
      };
      BOOST_TEST(engine_of(1) == 0);
      BOOST_TEST(engine_of(2) == 1);
      if (!whole) {
        // Any quota left takes a job: the second long prompt goes into engine 0's queue behind
        // the short one (its quota left, 0.49 s, is positive) though it overruns it.
        BOOST_TEST(a.size() == 3u);
        BOOST_TEST(engine_of(3) == 0);
        continue;
      }
      // Only what fits: the first long prompt fills engine 1; the second fits nowhere and waits.
      BOOST_TEST(a.size() == 2u);
      BOOST_TEST(b.queued(1) == 1u);
      // Engine 0 runs dry first: holding nothing, it takes the long prompt whatever its price.
      b.complete(0, 0, 0.01);
      const auto lent = b.dispatch();
      BOOST_TEST_REQUIRE(lent.size() == 1u);
      BOOST_TEST((lent[0].id == 3u && lent[0].engine == 0));
      // A short prompt that fits still goes to its own engine's queue... when it fits: engine 0
      // holds 0.5 s now, so it waits; engine 1 lends nothing (it is full too).
      b.submit({4, 1000, 0.01});
      BOOST_TEST(b.dispatch().empty());
      b.complete(1, 0, 0.5);
      const auto next = b.dispatch();
      BOOST_TEST_REQUIRE(next.size() == 1u);
      BOOST_TEST((next[0].id == 4u && next[0].engine == 1)); // the idle engine lends itself
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
