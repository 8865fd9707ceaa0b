#include "actors/entrypoint/background_events.hpp"

#include <boost/test/unit_test.hpp>

using deepinfer::actors::background_events;
using deepinfer::actors::recording_writer;
namespace http = deepinfer::actors::http;

namespace {

/// What a client connection would have received.
struct capture final : http::response_writer {
  std::string bytes;
  bool started = false, finished = false;
  std::function<void()> gone;
  void send(http::http_response r) override { bytes += r.body; finished = true; }
  void start_stream(unsigned, std::string, header_list) override { started = true; }
  void write(std::string chunk) override { bytes += chunk; }
  void finish() override { finished = true; }
  void on_disconnect(std::function<void()> cb) override { gone = std::move(cb); }
};

std::string ev(int k) { return "event: e\ndata: {\"sequence_number\":" + std::to_string(k) + "}\n\n"; }

} // namespace

BOOST_AUTO_TEST_SUITE(background_events_suite)

BOOST_AUTO_TEST_CASE(a_replay_starts_after_the_given_event_and_follows_until_the_end) {
  auto log = std::make_shared<background_events>();
  auto client = std::make_shared<capture>();
  recording_writer w{client, log};
  w.start_stream(200, "text/event-stream", {});
  w.write(ev(0) + ev(1) + ev(2)); // one chunk, three events
  BOOST_TEST(log->size() == 3u);
  BOOST_TEST(client->bytes == ev(0) + ev(1) + ev(2));
  auto late = std::make_shared<capture>();
  log->replay(late, 0);
  BOOST_TEST(late->started);
  BOOST_TEST(late->bytes == ev(1) + ev(2));
  auto gone = std::make_shared<capture>();
  log->replay(gone, -1);
  BOOST_TEST(gone->bytes == ev(0) + ev(1) + ev(2));
  gone->gone(); // its client left: it gets nothing more
  w.write(ev(3));
  BOOST_TEST(late->bytes == ev(1) + ev(2) + ev(3));
  BOOST_TEST(gone->bytes == ev(0) + ev(1) + ev(2));
  BOOST_TEST(!late->finished);
  w.finish();
  BOOST_TEST(late->finished);
  BOOST_TEST(!gone->finished);
  BOOST_TEST(log->ended());
  auto after = std::make_shared<capture>();
  log->replay(after, 2);
  BOOST_TEST(after->bytes == ev(3));
  BOOST_TEST(after->finished);
  log->replay(after = std::make_shared<capture>(), 10); // past the end: an empty, ended stream
  BOOST_TEST(after->bytes.empty());
  BOOST_TEST(after->finished);
  BOOST_TEST(log->bytes() == (ev(0) + ev(1) + ev(2) + ev(3)).size());
}

BOOST_AUTO_TEST_SUITE_END()
