#include "actors/instance/busy_log.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

using deepinfer::actors::busy_log;

BOOST_AUTO_TEST_SUITE(busy_log_suite)

BOOST_AUTO_TEST_CASE(overlap_counts_what_the_intervals_cover_of_a_wait) {
  busy_log log;
  log.record(100, 200);
  log.record(250, 300);
  log.record(300, 300); // empty: not kept
  BOOST_TEST(log.overlap(0, 1000) == 150);
  BOOST_TEST(log.overlap(150, 275) == 75); // half of the first, half of the second
  BOOST_TEST(log.overlap(200, 250) == 0);  // between them
  BOOST_TEST(log.overlap(400, 500) == 0);
}

BOOST_AUTO_TEST_CASE(only_the_latest_intervals_are_kept) {
  busy_log log;
  for (int64_t k = 0; k < static_cast<int64_t>(busy_log::capacity) + 10; ++k)
    log.record(k * 10, k * 10 + 5);
  // The ten oldest dropped out: [0, 100) holds none any more.
  BOOST_TEST(log.overlap(0, 100) == 0);
  BOOST_TEST(log.overlap(100, 110) == 5);
  BOOST_TEST(log.overlap(0, 100000) == static_cast<int64_t>(busy_log::capacity) * 5);
}

BOOST_AUTO_TEST_CASE(nested_scopes_record_once) {
  busy_log log;
  int64_t outer_begin = 0;
  {
    busy_log::scope outer{log};
    outer_begin = outer.begin();
    {
      busy_log::scope inner{log};
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // The inner scope ended inside the outer one: it recorded nothing.
    BOOST_TEST(log.overlap(0, busy_log::now_us() + 1) == 0);
  }
  const auto end = busy_log::now_us();
  // The outer one recorded its whole span, once.
  const auto covered = log.overlap(0, end + 1000000);
  BOOST_TEST(covered >= 2000);
  BOOST_TEST(covered <= end - outer_begin);
}

BOOST_AUTO_TEST_SUITE_END()
