#include "balancers/serving_router.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>

using deepinfer::balancers::serving_router;

namespace {

serving_router::config quota_of(double per_rank_s) {
  serving_router::config c;
  c.prefill.quota_per_rank_s = per_rank_s;
  return c;
}

int64_t requests_on(const std::vector<serving_router::rank_load>& loads, const std::string& inst, uint32_t rank) {
  for (const auto& l : loads)
    if (l.where.instance == inst && l.where.rank == rank)
      return l.requests;
  return -1;
}

} // namespace

BOOST_AUTO_TEST_SUITE(serving_router_suite)

BOOST_AUTO_TEST_CASE(prefills_wait_in_the_balancer_until_an_instance_has_quota_left) {
  serving_router r(quota_of(1.0));
  const std::vector<serving_router::instance_shape> one{{"p0", 1, 0}};
  r.set_prefill_instances(one);
  r.submit_prefill(1, 1000, 0.8);
  r.submit_prefill(2, 1000, 0.8);
  auto a = r.dispatch_prefills();
  // the first fills the rank's quota (0.8 of 1.0 pulls one more: quota left > 0) ...
  BOOST_TEST_REQUIRE(a.size() == 2u);
  r.submit_prefill(3, 1000, 0.5);
  // ... and now 1.6 > 1.0: job 3 waits for a completion instead of queueing on the rank.
  BOOST_TEST(r.dispatch_prefills().empty());
  BOOST_TEST(r.queued_prefills() == 1u);
  r.finish_prefill(1);
  a = r.dispatch_prefills();
  BOOST_TEST_REQUIRE(a.size() == 1u);
  BOOST_TEST(a[0].id == 3u);
  BOOST_TEST(a[0].where.instance == "p0");
}

BOOST_AUTO_TEST_CASE(computed_chunks_give_their_quota_back_before_the_prefill_finishes) {
  serving_router r(quota_of(1.0));
  const std::vector<serving_router::instance_shape> one{{"p0", 1, 0}};
  r.set_prefill_instances(one);
  r.submit_prefill(1, 1000, 1.5);
  BOOST_TEST_REQUIRE(r.dispatch_prefills().size() == 1u);
  r.submit_prefill(2, 1000, 0.5);
  BOOST_TEST(r.dispatch_prefills().empty()); // 1.5 held of 1.0
  r.release_prefill(1, 1.0);                 // a chunk worth 1.0 computed: 0.5 left
  BOOST_TEST(r.prefill().rank_load(0, 0) == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(r.dispatch_prefills().size() == 1u);
  r.release_prefill(1, 9.0); // never more than it holds
  BOOST_TEST(r.prefill().rank_load(0, 0) == 0.5, boost::test_tools::tolerance(1e-12));
  r.finish_prefill(1); // its rest is 0 now
  r.finish_prefill(2);
  BOOST_TEST(r.prefill().rank_load(0, 0) == 0.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_prefill_goes_to_the_lowest_quota_rank_of_the_instance) {
  serving_router r(quota_of(10.0));
  const std::vector<serving_router::instance_shape> one{{"p0", 3, 0}};
  r.set_prefill_instances(one);
  r.submit_prefill(1, 100, 3.0);
  r.submit_prefill(2, 100, 1.0);
  r.submit_prefill(3, 100, 1.0);
  r.submit_prefill(4, 100, 1.0);
  const auto a = r.dispatch_prefills();
  BOOST_TEST_REQUIRE(a.size() == 4u);
  BOOST_TEST(a[0].where.rank == 0u);
  BOOST_TEST(a[1].where.rank == 1u);
  BOOST_TEST(a[2].where.rank == 2u);
  BOOST_TEST(a[3].where.rank == 1u); // 3.0 / 1.0 / 1.0: rank 1 is the first lowest
}

BOOST_AUTO_TEST_CASE(an_instance_prices_prefills_with_its_own_cost_model_and_pulls_by_it) {
  using deepinfer::balancers::cost_model;
  cost_model::config fast_terms, slow_terms;
  fast_terms.a1 = 1e-4; // 1,000 new tokens: 0.1 s
  slow_terms.a1 = 3e-4; // the same on hardware three times slower: 0.3 s
  slow_terms.a2 = 1e-8; // and its attention over the hit: + 1e-8 x 1,000 x 2,000 = 0.02 s
  serving_router r(quota_of(1.0));
  std::vector<serving_router::instance_shape> shapes{{"fast", 1, 0, cost_model{fast_terms}},
                                                     {"slow", 1, 0, cost_model{slow_terms}}};
  r.set_prefill_instances(shapes);
  // Priced by the submitter at 0.1 s (the fast engine's price); 2,000 of 3,000 tokens cached.
  for (uint64_t id = 1; id <= 30; ++id)
    r.submit_prefill(id, 3000, 0.1, 2000);
  std::vector<uint64_t> on_slow;
  int on_fast = 0;
  for (const auto& a : r.dispatch_prefills()) {
    if (a.where.instance == "slow")
      on_slow.push_back(a.id);
    else
      ++on_fast;
  }
  // Each pulls while it has quota left, counted in its own seconds: the slow one holds 0.32 s
  // per job, so it takes 4 (0.96 left 0.04), the fast one 10 or 11 (0.1 each; rounding).
  BOOST_TEST_REQUIRE(on_slow.size() == 4u);
  BOOST_TEST((on_fast == 10 || on_fast == 11));
  BOOST_TEST(r.prefill().rank_load(1, 0) == 4 * 0.32, boost::test_tools::tolerance(1e-9));
  for (const auto& l : r.prefill_loads())
    BOOST_TEST(l.placed == (l.where.instance == "slow" ? 4 : on_fast));
  // Finishing gives back what the job held there, its slow price.
  r.finish_prefill(on_slow[0]);
  BOOST_TEST(r.prefill().rank_load(1, 0) == 3 * 0.32, boost::test_tools::tolerance(1e-9));
  // Two idle instances serving the same bucket: the job goes where it leaves the most quota,
  // the fast one, whichever comes first in the view.
  serving_router both(quota_of(1.0));
  both.set_prefill_instances(std::vector<serving_router::instance_shape>{{"slow", 1, 0, cost_model{slow_terms}},
                                                                         {"fast", 1, 0, cost_model{fast_terms}}});
  both.submit_prefill(1, 3000, 0.1, 2000);
  both.new_round(); // all demand short: both instances serve the first bucket
  both.submit_prefill(2, 3000, 0.1, 2000);
  auto first = both.dispatch_prefills();
  BOOST_TEST_REQUIRE(first.size() == 2u);
  BOOST_TEST(first[0].where.instance == "fast");
  BOOST_TEST(first[1].where.instance == "fast"); // 0.8 left after it there, 0.68 on the slow one
  // A job whose hit is not known holds the submitter's price on any instance.
  serving_router plain(quota_of(1.0));
  plain.set_prefill_instances(std::vector<serving_router::instance_shape>{{"slow", 1, 0, cost_model{slow_terms}}});
  plain.submit_prefill(1, 3000, 0.1);
  BOOST_TEST_REQUIRE(plain.dispatch_prefills().size() == 1u);
  BOOST_TEST(plain.prefill().rank_load(0, 0) == 0.1, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_withdrawn_prefill_never_dispatches_and_a_down_instance_pulls_nothing) {
  serving_router r(quota_of(1.0));
  const std::vector<serving_router::instance_shape> two{{"p0", 1, 0}, {"p1", 1, 0}};
  r.set_prefill_instances(two);
  r.set_prefill_instances(std::vector<serving_router::instance_shape>{{"p1", 1, 0}}); // p0 down
  r.submit_prefill(1, 100, 2.0);
  r.submit_prefill(2, 100, 2.0);
  auto a = r.dispatch_prefills();
  BOOST_TEST_REQUIRE(a.size() == 1u);
  BOOST_TEST(a[0].where.instance == "p1");
  r.finish_prefill(2); // its request went away while queued
  BOOST_TEST(r.queued_prefills() == 0u);
  r.set_prefill_instances(two); // p0 back: nothing left to pull
  BOOST_TEST(r.dispatch_prefills().empty());
  r.submit_prefill(3, 100, 0.5);
  a = r.dispatch_prefills();
  BOOST_TEST_REQUIRE(a.size() == 1u);
  BOOST_TEST(a[0].where.instance == "p0"); // p1 still holds job 1's 2.0
}

BOOST_AUTO_TEST_CASE(an_instance_that_restarts_smaller_keeps_its_remaining_ranks_load) {
  serving_router r(quota_of(10.0));
  r.set_prefill_instances(std::vector<serving_router::instance_shape>{{"p0", 2, 0}});
  r.submit_prefill(1, 100, 1.0);
  r.submit_prefill(2, 100, 1.0);
  BOOST_TEST(r.dispatch_prefills().size() == 2u);
  r.set_prefill_instances(std::vector<serving_router::instance_shape>{{"p0", 1, 0}});
  auto loads = r.prefill_loads();
  BOOST_TEST_REQUIRE(loads.size() == 1u);
  BOOST_TEST(loads[0].quota_s == 1.0);
  r.finish_prefill(2); // it was on rank 1, which is gone: nothing to give back
  r.finish_prefill(1);
  BOOST_TEST(r.prefill_loads()[0].quota_s == 0.0);
}

BOOST_AUTO_TEST_CASE(decode_placement_respects_each_ranks_real_pool) {
  serving_router r({});
  // rank 0 of d0 holds 1,000 tokens, d1's rank 10,000
  r.set_decode_instances(std::vector<serving_router::instance_shape>{{"d0", 1, 1000}, {"d1", 1, 10000}});
  auto a = r.place_decode(1, 900);
  BOOST_TEST_REQUIRE(a.has_value());
  auto b = r.place_decode(2, 900);
  BOOST_TEST_REQUIRE(b.has_value());
  BOOST_TEST(a->instance != b->instance); // balance
  // d0 now holds 900 of 1,000: a third 900-token request can only go to d1
  auto c = r.place_decode(3, 900);
  BOOST_TEST_REQUIRE(c.has_value());
  const auto d0_busy = (a->instance == "d0") ? 1 : 2;
  BOOST_TEST(c->instance == "d1");
  // nothing fits anywhere: nullopt, not a failed import later
  BOOST_TEST(!r.place_decode(4, 9000).has_value());
  r.finish_decode(static_cast<uint64_t>(d0_busy));
  BOOST_TEST(r.place_decode(5, 1000).has_value());
}

BOOST_AUTO_TEST_CASE(decode_kv_grows_with_generation_and_steers_later_placements) {
  serving_router r({});
  r.set_decode_instances(std::vector<serving_router::instance_shape>{{"d0", 2, 5000}});
  auto a = r.place_decode(1, 100);
  auto b = r.place_decode(2, 100);
  BOOST_TEST_REQUIRE((a && b));
  BOOST_TEST(a->rank != b->rank);
  r.grow_decode(1, 4800); // request 1 generated a lot
  auto loads = r.decode_loads();
  const auto full = a->rank;
  BOOST_TEST(loads[full].kv_tokens == 4800);
  auto c = r.place_decode(3, 300); // does not fit next to request 1 any more
  BOOST_TEST_REQUIRE(c.has_value());
  BOOST_TEST(c->rank != full);
}

BOOST_AUTO_TEST_CASE(a_rank_takes_a_request_only_if_everything_it_holds_can_still_finish) {
  serving_router r({});
  r.set_decode_instances(std::vector<serving_router::instance_shape>{{"d0", 1, 1000}});
  // 100 tokens now, up to 600 with its max_tokens: fits (600 of 1,000)
  BOOST_TEST(r.place_decode(1, 100, 600).has_value());
  // another 100 + 500 would overflow the pool once both have generated: refused now, not at import
  BOOST_TEST(!r.place_decode(2, 100, 600).has_value());
  BOOST_TEST(r.place_decode(3, 100, 400).has_value()); // 600 + 400 = 1,000 fits
  r.finish_decode(1);
  BOOST_TEST(r.place_decode(2, 100, 600).has_value());
  BOOST_TEST(r.decode_loads()[0].kv_reserved == 1000);
}

BOOST_AUTO_TEST_CASE(a_dead_decode_instance_forgets_its_placements_and_adoption_restores_them) {
  serving_router r({});
  const std::vector<serving_router::instance_shape> two{{"d0", 1, 0}, {"d1", 1, 0}};
  r.set_decode_instances(two);
  auto a = r.place_decode(1, 100);
  BOOST_TEST_REQUIRE(a.has_value());
  r.set_decode_instances(std::vector<serving_router::instance_shape>{{"d1", 1, 0}});
  BOOST_TEST(r.decode_loads().size() == 1u);
  BOOST_TEST(requests_on(r.decode_loads(), "d1", 0) == (a->instance == "d1" ? 1 : 0));
  // a restarted balancer learns placements again from the requests that hold them
  serving_router fresh({});
  fresh.set_decode_instances(two);
  BOOST_TEST(fresh.adopt_decode(7, {"d0", 0}, 500));
  BOOST_TEST(!fresh.adopt_decode(8, {"d9", 0}, 500));
  BOOST_TEST(requests_on(fresh.decode_loads(), "d0", 0) == 1);
}

BOOST_AUTO_TEST_SUITE_END()
