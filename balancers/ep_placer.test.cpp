#include "balancers/ep_placer.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using deepinfer::balancers::ep_placer;

BOOST_AUTO_TEST_SUITE(ep_placer_suite)

const std::vector<double> skewed{8, 4, 2, 2, 1, 1, 1, 1};

BOOST_AUTO_TEST_CASE(slot_count_rounds_up_to_a_multiple_of_ep) {
  BOOST_TEST(ep_placer({.experts = 384, .ranks = 64, .redundant_per_rank = 1}).slots_per_rank() == 7);
  BOOST_TEST(ep_placer({.experts = 256, .ranks = 4, .redundant_per_rank = 4}).slots_per_rank() == 68);
  BOOST_TEST(ep_placer({.experts = 10, .ranks = 4, .redundant_per_rank = 0}).slots_per_rank() == 3);
}

BOOST_AUTO_TEST_CASE(redundant_replicas_of_hot_experts_balance_ranks_exactly) {
  // 8 experts on 2 ranks, 1 redundant each: the 2 extra slots go to experts 0 and 1, LPT then
  // reaches 10 / 10.
  ep_placer p({.experts = 8, .ranks = 2, .redundant_per_rank = 1, .window = 1, .interval = 1});
  p.place(skewed);
  BOOST_TEST(p.replicas()[0].size() == 2u);
  BOOST_TEST(p.replicas()[1].size() == 2u);
  const auto load = p.rank_load(skewed);
  BOOST_TEST(load[0] == 10.0);
  BOOST_TEST(load[1] == 10.0);
  BOOST_TEST(ep_placer::moe_lb(load) == 1.0);
  // replicas alternate between the two ranks
  BOOST_TEST(p.route(0, 0) != p.route(0, 1));
}

BOOST_AUTO_TEST_CASE(without_redundancy_lpt_leaves_eleven_against_nine) {
  // LPT: 8->r0, 4->r1, 2->r1, 2->r1, 1->r0, 1->r1 (r1 full), 1->r0, 1->r0: 11 / 9, lb 1.1
  ep_placer p({.experts = 8, .ranks = 2, .redundant_per_rank = 0, .window = 1, .interval = 1});
  p.place(skewed);
  const auto load = p.rank_load(skewed);
  BOOST_TEST(load[0] == 11.0);
  BOOST_TEST(load[1] == 9.0);
  BOOST_TEST(ep_placer::moe_lb(load) == 1.1, boost::test_tools::tolerance(1e-12));
  for (const auto& s : p.slots())
    BOOST_TEST(s.size() == 4u);
}

BOOST_AUTO_TEST_CASE(replacement_happens_every_m_steps_from_the_last_n_steps) {
  ep_placer p({.experts = 4, .ranks = 2, .redundant_per_rank = 1, .window = 2, .interval = 3});
  const std::vector<double> hot0{9, 1, 1, 1};
  const std::vector<double> hot3{1, 1, 1, 9};
  BOOST_TEST(!p.record_step(hot0));
  BOOST_TEST(!p.record_step(hot3));
  // the window holds steps 2 and 3 (loads 2, 2, 2, 18): both extra slots go to expert 3
  // (18/2 = 9 > 2, then 18/3 = 6 > 2), so it has three replicas
  BOOST_TEST(p.record_step(hot3));
  BOOST_TEST(p.replicas()[3].size() == 3u);
  BOOST_TEST(p.replicas()[0].size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
