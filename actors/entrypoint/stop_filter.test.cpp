#include "actors/entrypoint/stop_filter.hpp"

#include <boost/test/unit_test.hpp>

using deepinfer::actors::stop_filter;
using deepinfer::recipe::stream_event;

namespace {

stream_event content(std::string s) {
  stream_event e;
  e.type = stream_event::kind::content;
  e.text = std::move(s);
  return e;
}

/// Feeds each piece as one event; returns the concatenated content and whether a finish came.
std::pair<std::string, bool> run(stop_filter& f, std::vector<std::string> pieces) {
  std::string text;
  bool finished = false;
  for (auto& p : pieces) {
    std::vector<stream_event> in{content(p)};
    for (auto& e : f.apply(in)) {
      if (e.type == stream_event::kind::content)
        text += e.text;
      if (e.type == stream_event::kind::finish)
        finished = true;
    }
  }
  return {text, finished};
}

} // namespace

BOOST_AUTO_TEST_SUITE(stop_filter_suite)

BOOST_AUTO_TEST_CASE(stop_string_split_across_events_ends_the_stream_before_it) {
  stop_filter f{{"END"}};
  auto [text, finished] = run(f, {"hello E", "N", "D and more", "ignored"});
  BOOST_TEST(text == "hello ");
  BOOST_TEST(finished);
  BOOST_TEST(f.stopped());
}

BOOST_AUTO_TEST_CASE(a_partial_match_that_fails_is_released) {
  stop_filter f{{"END"}};
  auto [text, finished] = run(f, {"EN", "x"});
  BOOST_TEST(text == "ENx");
  BOOST_TEST(!finished);
}

BOOST_AUTO_TEST_CASE(earliest_of_several_stops_wins) {
  stop_filter f{{"zz", "b"}};
  auto [text, finished] = run(f, {"aazzab"});
  BOOST_TEST(text == "aa");
  BOOST_TEST(finished);
}

BOOST_AUTO_TEST_CASE(no_stops_passes_everything) {
  stop_filter f{{}};
  auto [text, finished] = run(f, {"a", "b"});
  BOOST_TEST(text == "ab");
  BOOST_TEST(!finished);
}

BOOST_AUTO_TEST_SUITE_END()
