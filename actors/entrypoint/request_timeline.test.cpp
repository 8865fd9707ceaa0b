#include "actors/entrypoint/request_timeline.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>

using deepinfer::actors::request_timeline;
using stage = request_timeline::stage;
using namespace std::chrono_literals;

namespace {

std::map<std::string, double> by_name(const request_timeline& t, request_timeline::clock::time_point end) {
  std::map<std::string, double> out;
  for (const auto& e : t.entries(end))
    out[std::string{e.name}] = e.seconds;
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(request_timeline_suite)

BOOST_AUTO_TEST_CASE(stages_are_the_times_between_closes_and_sum_to_the_total) {
  const request_timeline::clock::time_point t0{1000ms};
  request_timeline t;
  t.begin(t0, t0 + 2ms, t0 + 3ms);
  t.close(stage::parse, t0 + 4ms);
  t.close(stage::prepare, t0 + 7ms);
  t.close(stage::admit, t0 + 7ms);
  t.close(stage::decode_pick, t0 + 8ms);
  t.close(stage::prefill_pick, t0 + 10ms);
  t.close(stage::prefill, t0 + 30ms);
  t.close(stage::decode, t0 + 50ms);
  auto m = by_name(t, t0 + 51ms);
  BOOST_TEST(m.at("read") == 0.002, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("dispatch") == 0.001, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("parse") == 0.001, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("prepare") == 0.003, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("admit") == 0.0);
  BOOST_TEST(m.at("prefill") == 0.020, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("decode") == 0.020, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("total") == 0.051, boost::test_tools::tolerance(1e-9));
  // Stages never closed are not listed (no images, no SWA lookup).
  BOOST_TEST(m.count("vision") == 0u);
  BOOST_TEST(m.count("swa") == 0u);
  double sum = 0;
  for (const auto& [name, s] : m)
    if (name != "total")
      sum += s;
  BOOST_TEST(sum == 0.050, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(the_rank_report_splits_the_prefill_round_trip) {
  const request_timeline::clock::time_point t0{5s};
  request_timeline t;
  t.begin(t0, t0, t0);
  t.close(stage::prefill_pick, t0 + 1ms);
  t.close_prefill({0.004, 0.012}, t0 + 21ms);
  auto m = by_name(t, t0 + 21ms);
  BOOST_TEST(m.count("prefill") == 0u);
  BOOST_TEST(m.at("rank_queue") == 0.004, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("rank_step") == 0.012, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("prefill_transit") == 0.004, boost::test_tools::tolerance(1e-9));
  // A report longer than the round trip (it cannot be, but clocks tick apart) never makes a
  // part negative or the parts longer than the trip.
  t.close_prefill({0.015, 0.010}, t0 + 21ms);
  m = by_name(t, t0 + 21ms);
  BOOST_TEST(m.at("prefill_transit") == 0.0);
  BOOST_TEST(m.at("rank_queue") == 0.015, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("rank_step") == 0.005, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(the_way_to_the_rank_splits_the_transit_both_ways) {
  const request_timeline::clock::time_point t0{5s};
  request_timeline t;
  t.begin(t0, t0, t0);
  t.close(stage::prefill_pick, t0 + 1ms);
  // A 20 ms trip: 6 ms on the way (4 of them the rank busy with a step), 2 queued, 10 stepping.
  t.close_prefill({0.002, 0.010, 0.006, 0.004}, t0 + 21ms);
  auto m = by_name(t, t0 + 21ms);
  BOOST_TEST(m.count("prefill_transit") == 0u);
  BOOST_TEST(m.at("prefill_send") == 0.002, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("rank_busy") == 0.004, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("rank_queue") == 0.002, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("rank_step") == 0.010, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("prefill_return") == 0.002, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(request_timeline::server_timing(t.entries(t0 + 21ms)) == "read;dur=0.000, dispatch;dur=0.000, prefill_pick;dur=1.000, "
                                           "prefill_send;dur=2.000, rank_busy;dur=4.000, rank_queue;dur=2.000, "
                                           "rank_step;dur=10.000, prefill_return;dur=2.000, total;dur=21.000");
  // Clocks apart by more than the trip (another machine's clock ahead): the way there takes what
  // the trip holds, the busy part never more than the way, nothing goes negative.
  t.close_prefill({0.002, 0.010, 0.050, 0.080}, t0 + 21ms);
  m = by_name(t, t0 + 21ms);
  BOOST_TEST(m.at("prefill_send") == 0.0);
  BOOST_TEST(m.at("rank_busy") == 0.020, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("rank_queue") == 0.0);
  BOOST_TEST(m.at("rank_step") == 0.0);
  BOOST_TEST(m.at("prefill_return") == 0.0);
}

BOOST_AUTO_TEST_CASE(a_stage_entered_again_adds_its_time) {
  const request_timeline::clock::time_point t0{1s};
  request_timeline t;
  t.begin(t0, t0, t0);
  t.close(stage::decode_pick, t0 + 1ms);
  t.close(stage::prefill_pick, t0 + 2ms);
  t.close(stage::prefill, t0 + 10ms);  // lost: resubmitted
  t.close(stage::decode_pick, t0 + 60ms); // the backoff and the second pick
  t.close(stage::prefill_pick, t0 + 61ms);
  t.close(stage::prefill, t0 + 70ms);
  auto m = by_name(t, t0 + 70ms);
  BOOST_TEST(m.at("decode_pick") == 0.051, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("prefill_pick") == 0.002, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(m.at("prefill") == 0.017, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(the_header_lists_milliseconds_in_stage_order) {
  const request_timeline::clock::time_point t0{1s};
  request_timeline t;
  t.begin(t0, t0 + 500us, t0 + 750us);
  t.close(stage::prefill, t0 + 2750us);
  t.close(stage::parse, t0 + 3ms); // listed in stage order, not in the order closed
  BOOST_TEST(request_timeline::server_timing(t.entries(t0 + 4ms)) ==
             "read;dur=0.500, dispatch;dur=0.250, parse;dur=0.250, prefill;dur=2.000, total;dur=4.000");
}

BOOST_AUTO_TEST_CASE(a_request_without_http_times_starts_when_its_actor_ran) {
  const request_timeline::clock::time_point t0{1s};
  request_timeline t;
  t.begin({}, {}, t0);
  t.close(stage::prepare, t0 + 1ms);
  auto m = by_name(t, t0 + 1ms);
  BOOST_TEST(m.at("read") == 0.0);
  BOOST_TEST(m.at("dispatch") == 0.0);
  BOOST_TEST(m.at("total") == 0.001, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_SUITE_END()
