#include "balancers/autoscaler.hpp"

#include <boost/test/unit_test.hpp>

using deepinfer::balancers::autoscaler;

BOOST_AUTO_TEST_SUITE(autoscaler_suite)

BOOST_AUTO_TEST_CASE(prefill_scales_up_from_missed_tokens_with_headroom_and_rate_limit) {
  const autoscaler a({});
  // 960K missed tok/s / 480K = 2 instances, x1.2 = 2.4 -> 3; from 1, +4 allowed.
  const auto d = a.decide({.missed_tok_per_s = 960e3, .prefill = 1, .decode = 1});
  BOOST_TEST(d.prefill == 3);
  // 10x the load: need 24, but at most +4 per decision.
  BOOST_TEST(a.decide({.missed_tok_per_s = 9.6e6, .prefill = 1, .decode = 1}).prefill == 5);
  BOOST_TEST(a.decide({.missed_tok_per_s = 1e9, .prefill = 62, .decode = 1}).prefill == 64);
}

BOOST_AUTO_TEST_CASE(decode_scale_down_is_one_step_with_a_grace_deadline) {
  const autoscaler a({});
  // 9000 in flight / 3000 = 3, x1.2 -> 4; from 10 only -1.
  const auto d = a.decide({.now_s = 100, .requests_in_flight = 9000, .quota_use = 0.5, .prefill = 1, .decode = 10});
  BOOST_TEST(d.decode == 9);
  BOOST_TEST(d.decode_draining == 1);
  BOOST_TEST(d.drain_deadline_s == 160.0);
  BOOST_TEST(d.ready_pool == 2);
}

BOOST_AUTO_TEST_CASE(no_scale_down_while_quota_use_is_above_0_8) {
  const autoscaler a({});
  const auto d = a.decide({.requests_in_flight = 9000, .quota_use = 0.9, .prefill = 8, .decode = 10});
  BOOST_TEST(d.decode == 10);
  BOOST_TEST(d.prefill == 8);
  BOOST_TEST(d.decode_draining == 0);
}

BOOST_AUTO_TEST_CASE(queueing_adds_prefill_instances_even_when_missed_tokens_look_fine) {
  const autoscaler a({});
  // missed tokens say 1 instance, but a 3 s queue against a 1 s target triples the current 5.
  BOOST_TEST(a.prefill_need({.missed_tok_per_s = 480e3, .queue_time_s = 3.0, .prefill = 5}) == 15.0);
  BOOST_TEST(a.decide({.missed_tok_per_s = 480e3, .queue_time_s = 3.0, .prefill = 5, .decode = 1}).prefill == 9);
  // without the queue it would shrink toward 2
  BOOST_TEST(a.decide({.missed_tok_per_s = 480e3, .prefill = 5, .decode = 1}).prefill == 4);
}

BOOST_AUTO_TEST_CASE(the_queue_rule_scales_the_serving_instances_and_waits_for_those_starting) {
  const autoscaler a({});
  // 8 instances, 3 of them still starting, a 3 s queue: wait for them (hold 8, add none).
  const autoscaler::observation starting{.missed_tok_per_s = 480e3, .queue_time_s = 3.0, .prefill = 8, .decode = 1,
                                         .prefill_starting = 3};
  BOOST_TEST(a.decide(starting).prefill == 8);
  // Once they serve, the queue scales the 8 that serve: 8 x 3 = 24 (+4 per decision).
  auto up = starting;
  up.prefill_starting = 0;
  BOOST_TEST(a.prefill_need(up) == 24.0);
  BOOST_TEST(a.decide(up).prefill == 12);
  // Only 5 of 8 serve and nothing starts (3 draining are not counted in `prefill`): 5 x 3.
  BOOST_TEST(a.prefill_need({.queue_time_s = 3.0, .prefill = 5}) == 15.0);
}

BOOST_AUTO_TEST_SUITE_END()
