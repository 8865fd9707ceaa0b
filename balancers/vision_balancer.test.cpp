#include "balancers/vision_balancer.hpp"

#include <boost/test/unit_test.hpp>

#include <utility>
#include <vector>

using deepinfer::balancers::vision_balancer;

BOOST_AUTO_TEST_SUITE(vision_balancer_suite)

BOOST_AUTO_TEST_CASE(patches_are_width_over_patch_times_height_over_patch) {
  BOOST_TEST(vision_balancer::patches(64, 64, 16) == 16);
  BOOST_TEST(vision_balancer::patches(70, 33, 16) == 8); // 4 x 2, partial patches cropped
}

BOOST_AUTO_TEST_CASE(card_with_fewest_patches_in_flight_is_chosen) {
  vision_balancer v({.machines = 1, .cards_per_machine = 3, .patch = 16, .seed = 7});
  const auto p0 = v.route(64, 64);  // 16 patches -> card 0
  const auto p1 = v.route(32, 32);  // 4 -> card 1
  const auto p2 = v.route(160, 16); // 10 -> card 2
  BOOST_TEST(p0.card == 0);
  BOOST_TEST(p1.card == 1);
  BOOST_TEST(p2.card == 2);
  BOOST_TEST(v.route(16, 16).card == 1); // loads 16, 4, 10
  v.done(p0);
  BOOST_TEST(v.in_flight(0, 0) == 0);
  BOOST_TEST(v.route(16, 16).card == 0);
}

BOOST_AUTO_TEST_CASE(machines_are_drawn_at_random_and_all_get_used) {
  vision_balancer v({.machines = 4, .cards_per_machine = 2, .patch = 16, .seed = 3});
  std::array<int, 4> hits{};
  for (int i = 0; i < 400; ++i)
    ++hits[static_cast<size_t>(v.route(16, 16).machine)];
  for (const int h : hits)
    BOOST_TEST(h > 50); // expectation 100 each
}

BOOST_AUTO_TEST_CASE(round_robin_deals_every_card_in_turn_whatever_it_holds) {
  vision_balancer v({.machines = 2, .cards_per_machine = 2, .patch = 16, .seed = 3,
                     .policy = deepinfer::balancers::vision_policy::round_robin});
  const auto big = v.route(1024, 1024); // machine 0, card 0
  BOOST_TEST(big.machine == 0);
  BOOST_TEST(big.card == 0);
  std::vector<std::pair<int, int>> order;
  for (int i = 0; i < 4; ++i) {
    const auto p = v.route(16, 16);
    order.emplace_back(p.machine, p.card);
  }
  // Card (0, 0) comes round again although it holds 4096 patches and the others 1.
  BOOST_TEST((order == std::vector<std::pair<int, int>>{{0, 1}, {1, 0}, {1, 1}, {0, 0}}));
  BOOST_TEST(v.in_flight(0, 0) == 4097);
  v.done(big);
  BOOST_TEST(v.in_flight(0, 0) == 1);
}

BOOST_AUTO_TEST_SUITE_END()
