// The vision-encoder load of issue 21 in virtual time: runs are reproducible, queue time grows
// with load, and the seeds' patch rule (the real vision_balancer) queues less than round robin on
// a mix of large and small images, where round robin puts small images behind large ones.
#include "balancers/sim/vision_sim.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::balancers::sim;

BOOST_AUTO_TEST_SUITE(vision_sim)

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_run) {
  vision_sim_config cfg;
  cfg.images = 20'000;
  auto a = run_vision_sim(cfg, vision_policy::patches);
  auto b = run_vision_sim(cfg, vision_policy::patches);
  BOOST_TEST(a.queue_p99_s == b.queue_p99_s);
  BOOST_TEST(a.utilization == b.utilization);
}

BOOST_AUTO_TEST_CASE(queue_time_grows_with_load) {
  vision_sim_config cfg;
  cfg.images = 20'000;
  cfg.rate = 200;
  auto light = run_vision_sim(cfg, vision_policy::patches);
  cfg.rate = 450;
  auto heavy = run_vision_sim(cfg, vision_policy::patches);
  BOOST_TEST(light.utilization < heavy.utilization);
  BOOST_TEST(light.queue_p99_s < heavy.queue_p99_s);
}

BOOST_AUTO_TEST_CASE(patch_rule_queues_less_than_round_robin_on_a_mixed_load) {
  vision_sim_config cfg;
  cfg.images = 50'000;
  auto patches = run_vision_sim(cfg, vision_policy::patches);
  auto rr = run_vision_sim(cfg, vision_policy::round_robin);
  BOOST_TEST_MESSAGE("p99 patches " << patches.queue_p99_s << " s, round robin " << rr.queue_p99_s << " s, util "
                                    << patches.utilization);
  BOOST_TEST(patches.queue_p99_s < rr.queue_p99_s);
}

BOOST_AUTO_TEST_SUITE_END()
