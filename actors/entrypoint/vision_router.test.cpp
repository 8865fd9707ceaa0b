// The entrypoint's vision router (issue 21): the vision balancer of DESIGN §6.3 over the live
// vision instances: on a machine, the rank with the fewest patches in flight; done() gives them
// back; a changed set of ranks starts a fresh balancer and ignores the old one's routes; the
// per-rank gauge follows the counts; round robin (the bench baseline) deals the ranks in turn.
#include "actors/entrypoint/vision_router.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>

#include <set>

#include "actors/errors.hpp"
#include "actors/testing/test_system_config.hpp"

using namespace deepinfer::actors;

namespace {

struct fixture {
  testing::test_system_config cfg;
  caf::actor_system sys{cfg};
  http::metrics_registry metrics;

  /// An actor handle standing in for a vision rank (the router only hands handles out).
  caf::strong_actor_ptr rank() {
    auto a = sys.spawn([](caf::event_based_actor*) -> caf::behavior { return {[](int) {}}; });
    return caf::actor_cast<caf::strong_actor_ptr>(a);
  }

  live_instance instance(const std::string& node, std::vector<caf::strong_actor_ptr> ranks) {
    live_instance i;
    i.name = node + "/vision";
    i.node = node;
    i.ranks = static_cast<uint32_t>(ranks.size());
    i.rank_handles = std::move(ranks);
    return i;
  }

  double gauge(const std::string& node, int rank) {
    auto text = metrics.render();
    auto key = "deepinfer_vision_patches_in_flight{node=\"" + node + "\",rank=\"" + std::to_string(rank) + "\"} ";
    auto at = text.find(key);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(vision_router_suite, fixture)

BOOST_AUTO_TEST_CASE(one_machine_fills_its_emptiest_rank_and_done_gives_patches_back) {
  auto& fam = metrics.add_gauge("deepinfer_vision_patches_in_flight", "test", {"node", "rank"});
  vision_router router(16, &fam);
  const std::vector<live_instance> view{instance("v0", {rank(), rank()})};
  auto big = router.pick(view, 1024, 1024); // 4096 patches
  BOOST_REQUIRE(big);
  auto small1 = router.pick(view, 256, 256); // 256: to the other rank
  auto small2 = router.pick(view, 256, 256); // still the other rank (512 < 4096)
  BOOST_REQUIRE(small1 && small2);
  BOOST_TEST(big->pick.patches == 4096);
  BOOST_TEST(small1->pick.card != big->pick.card);
  BOOST_TEST(small2->pick.card == small1->pick.card);
  BOOST_TEST((small1->rank != big->rank));
  BOOST_TEST(gauge("v0", big->pick.card) == 4096);
  BOOST_TEST(gauge("v0", small1->pick.card) == 512);
  router.done(*big);
  BOOST_TEST(gauge("v0", big->pick.card) == 0);
  // The big one is done: the next image goes to the now-empty rank.
  auto next = router.pick(view, 256, 256);
  BOOST_TEST(next->pick.card == big->pick.card);
}

BOOST_AUTO_TEST_CASE(no_vision_instance_gives_no_route) {
  vision_router router(16, nullptr);
  BOOST_TEST(!router.pick({}, 256, 256));
  BOOST_TEST(!router.pick({instance("v0", {})}, 256, 256));
}

BOOST_AUTO_TEST_CASE(both_machines_are_chosen_and_a_new_set_of_ranks_starts_afresh) {
  auto& fam = metrics.add_gauge("deepinfer_vision_patches_in_flight", "test", {"node", "rank"});
  vision_router router(16, &fam);
  auto a = rank(), b = rank(), c = rank();
  const std::vector<live_instance> two{instance("v0", {a}), instance("v1", {b})};
  std::set<caf::strong_actor_ptr> used;
  std::vector<vision_router::route> routes;
  for (int i = 0; i < 40; ++i) {
    routes.push_back(*router.pick(two, 256, 256));
    used.insert(routes.back().rank);
  }
  BOOST_TEST(used.size() == 2u); // a random machine each time: both are used
  // v1's rank was replaced (a restart): another balancer; the old routes' done() are ignored.
  const std::vector<live_instance> replaced{instance("v0", {a}), instance("v1", {c})};
  auto fresh = router.pick(replaced, 256, 256);
  BOOST_REQUIRE(fresh);
  BOOST_TEST(fresh->generation != routes.front().generation);
  const std::string node = fresh->rank == a ? "v0" : "v1";
  BOOST_TEST(gauge(node, 0) == 256);
  for (auto& r : routes)
    router.done(r);
  // The old routes' patches were never the new balancer's: its count stays.
  BOOST_TEST(gauge(node, 0) == 256);
  router.done(*fresh);
  BOOST_TEST(gauge(node, 0) == 0);
}

BOOST_AUTO_TEST_CASE(round_robin_deals_every_rank_of_every_machine_in_turn) {
  vision_router router(16, nullptr, deepinfer::balancers::vision_policy::round_robin);
  auto a = rank(), b = rank(), c = rank(), d = rank();
  const std::vector<live_instance> view{instance("v0", {a, b}), instance("v1", {c, d})};
  std::vector<caf::strong_actor_ptr> order;
  for (int i = 0; i < 8; ++i)
    order.push_back(router.pick(view, i == 0 ? 1024 : 256, 256)->rank);
  // The big first image does not keep the next small ones off its rank (the patch rule would).
  BOOST_TEST((order == std::vector<caf::strong_actor_ptr>{a, b, c, d, a, b, c, d}));
}

BOOST_AUTO_TEST_SUITE_END()
