#include <boost/test/unit_test.hpp>

#include "engine/ep/ep_load_window.hpp"
#include "engine/ep/expert_placement.hpp"
#include "engine/ep/expert_replacement.hpp"

namespace deepinfer::engine {

BOOST_AUTO_TEST_SUITE(expert_placement_suite)

BOOST_AUTO_TEST_CASE(slots_per_rank_rounds_the_total_up_to_a_multiple_of_ep) {
  BOOST_TEST(expert_placement::slots_per_rank(16, 4, 1) == 5);  // 20 / 4
  BOOST_TEST(expert_placement::slots_per_rank(16, 3, 1) == 7);  // 19 -> 21
  BOOST_TEST(expert_placement::slots_per_rank(16, 4, 4) == 8);  // prefill
  BOOST_TEST(expert_placement::slots_per_rank(384, 64, 1) == 7); // DESIGN §6.4: EP64 decode
}

BOOST_AUTO_TEST_CASE(every_expert_gets_a_slot_and_hot_experts_get_the_redundant_ones) {
  std::vector<std::vector<double>> load(2, std::vector<double>(16, 1.0));
  load[0][3] = 40.0;
  load[1][7] = 40.0;
  auto p = place_experts(2, 16, 4, 1, load);
  BOOST_TEST(p.check() == "");
  BOOST_TEST(p.slots_per_rank() == 5);
  BOOST_TEST(p.replicas(0, 3).size() == 5u); // 4 extra slots all to the hot expert
  BOOST_TEST(p.replicas(1, 7).size() == 5u);
  for (int e = 0; e < 16; ++e)
    BOOST_TEST(p.replicas(0, e).size() >= 1u);
}

BOOST_AUTO_TEST_CASE(re_placement_keeps_slots_whose_expert_stays_on_the_rank) {
  auto before = place_experts(1, 16, 4, 1, {});
  std::vector<std::vector<double>> load(1, std::vector<double>(16, 1.0));
  load[0][0] = 10.0;
  auto after = place_experts(1, 16, 4, 1, load, &before);
  BOOST_TEST(after.check() == "");
  int kept = 0;
  for (int r = 0; r < 4; ++r)
    for (int s = 0; s < 5; ++s) {
      const int e = after.expert(0, {r, s});
      if (e == before.expert(0, {r, s}))
        ++kept;
      else // a moved-in expert was not already on that rank in another kept slot's place
        for (int t = 0; t < 5; ++t)
          BOOST_TEST(!(before.expert(0, {r, t}) == e && after.expert(0, {r, t}) != e));
    }
  BOOST_TEST(kept > 0);
  // The same loads again: nothing moves.
  BOOST_TEST((place_experts(1, 16, 4, 1, load, &after) == after));
}

BOOST_AUTO_TEST_CASE(moe_lb_is_the_slowest_rank_over_the_mean_per_layer_over_the_window) {
  ep_load_window w(2, 4, 2, 2);
  BOOST_TEST(w.moe_lb() == 1.0);
  // layer 0: ranks 30 / 10, layer 1: 20 / 20 -> (30 + 20) / (20 + 20)
  w.add_step({1, 2, 3, 4, 5, 6, 7, 8}, {30, 10, 20, 20});
  BOOST_TEST(w.moe_lb() == 50.0 / 40.0);
  w.add_step({1, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0});
  w.add_step({1, 0, 0, 0, 0, 0, 0, 0}, {10, 10, 10, 10}); // the first step leaves
  BOOST_TEST(w.moe_lb() == 1.0);
  BOOST_TEST(w.expert_load(0) == (std::vector<double>{2, 0, 0, 0}));
  BOOST_TEST(w.steps() == 2);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace deepinfer::engine
