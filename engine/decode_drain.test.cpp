#include "engine/decode_drain.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::engine;
using namespace std::chrono_literals;

namespace {
const decode_drain::clock::time_point t0{std::chrono::seconds{1000}};
} // namespace

BOOST_AUTO_TEST_SUITE(decode_drain_suite)

BOOST_AUTO_TEST_CASE(sequences_decode_through_the_grace_period_then_are_offered_once) {
  decode_drain d{{}};
  BOOST_TEST(!d.noticed());
  BOOST_TEST(!d.offer(7, t0)); // no notice: nothing leaves
  d.notice(t0, 2000ms);
  BOOST_TEST(d.noticed());
  BOOST_TEST(!d.handing_off(t0 + 1999ms));
  BOOST_TEST(!d.offer(7, t0 + 1999ms));
  BOOST_TEST(d.handing_off(t0 + 2000ms));
  BOOST_TEST(d.offer(7, t0 + 2000ms));
  BOOST_TEST(d.offer(8, t0 + 2000ms)); // all of them in one go
  BOOST_TEST(!d.offer(7, t0 + 2001ms)); // an answer is awaited
}

BOOST_AUTO_TEST_CASE(a_sequence_no_other_rank_took_is_offered_again_after_the_retry) {
  decode_drain d{{.retry = 1000ms, .settle = 500ms}};
  d.notice(t0, 0ms);
  BOOST_TEST(d.offer(1, t0));
  BOOST_TEST(!d.offer(1, t0 + 999ms));
  BOOST_TEST((d.next_check(t0 + 10ms) == t0 + 1000ms));
  BOOST_TEST(d.offer(1, t0 + 1000ms));
  d.forget(1);
  BOOST_TEST(!d.next_check(t0 + 1000ms).has_value());
  BOOST_TEST(d.offer(1, t0 + 1001ms)); // a new sequence under an old id starts afresh
}

BOOST_AUTO_TEST_CASE(a_later_notice_brings_the_handoff_forward_never_back) {
  decode_drain d{{}};
  d.notice(t0, 60000ms);
  d.notice(t0 + 1000ms, 120000ms);
  BOOST_TEST(d.handing_off(t0 + 60000ms));
  d.notice(t0 + 2000ms, 0ms); // e.g. SIGTERM after a scale-down's notice
  BOOST_TEST(d.handing_off(t0 + 2000ms));
}

BOOST_AUTO_TEST_CASE(drained_needs_an_empty_rank_and_the_settle_time_or_the_grace) {
  decode_drain d{{.retry = 1000ms, .settle = 500ms}};
  BOOST_TEST(!d.drained(t0, 0)); // no notice: serving
  d.notice(t0, 2000ms);
  BOOST_TEST(!d.drained(t0 + 100ms, 0)); // KV placed before the notice may still come
  BOOST_TEST((d.next_check(t0 + 100ms) == t0 + 500ms));
  BOOST_TEST(d.drained(t0 + 500ms, 0));
  BOOST_TEST(!d.drained(t0 + 500ms, 3));  // still decoding in the grace period
  BOOST_TEST(!d.drained(t0 + 5000ms, 1)); // past it, until the last one has left
  BOOST_TEST(d.drained(t0 + 5000ms, 0));
  decode_drain now{{.retry = 1000ms, .settle = 500ms}};
  now.notice(t0, 0ms);
  BOOST_TEST(now.drained(t0, 0)); // no grace: no settle wait either
}

BOOST_AUTO_TEST_SUITE_END()
