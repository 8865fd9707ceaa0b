#include "actors/http/http_server.hpp"

#include "actors/http/http_test_client.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <future>

using namespace deepinfer::actors::http;
using namespace deepinfer::actors::http::testing;
using namespace std::chrono_literals;
using boost::beast::http::verb;
namespace utf = boost::unit_test;

namespace {

/// Routes whose writers the test drives by hand: /stream starts an SSE stream and hands its
/// writer out; /hold hands the writer out unanswered; both arm on_disconnect.
struct held_routes {
  std::promise<std::shared_ptr<response_writer>> writer;
  std::promise<void> disconnected;

  void add(router& r) {
    r.add("GET", "/stream", [this](http_request, std::shared_ptr<response_writer> w) {
      w->on_disconnect([this] { disconnected.set_value(); });
      w->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
      w->write("data: one\n\n");
      writer.set_value(w);
    });
    r.add("GET", "/hold", [this](http_request, std::shared_ptr<response_writer> w) {
      w->on_disconnect([this] { disconnected.set_value(); });
      writer.set_value(w);
    });
  }
};

using stream_parser = boost::beast::http::response_parser<boost::beast::http::string_body>;

/// Reads until the streamed body contains `needle`.
void read_until(http_test_client& c, stream_parser& p, std::string_view needle) {
  while (p.get().body().find(needle) == std::string::npos && !p.is_done())
    boost::beast::http::read_some(c.socket(), c.buffer(), p);
}

} // namespace

BOOST_AUTO_TEST_SUITE(http_server_streaming, *utf::timeout(60))

BOOST_FIXTURE_TEST_CASE(sse_stream_delivers_each_chunk_as_it_is_written, server_fixture) {
  held_routes h;
  start({}, [&](router& r) {
    h.add(r);
    r.add("GET", "/health", [](http_request, std::shared_ptr<response_writer> w) { w->send_json(200, "{}"); });
  });
  auto c = client();
  c.send(verb::get, "/stream");
  stream_parser p;
  boost::beast::http::read_header(c.socket(), c.buffer(), p);
  BOOST_TEST(p.get().result_int() == 200);
  BOOST_TEST(p.get()[boost::beast::http::field::content_type] == "text/event-stream");
  BOOST_TEST(p.chunked());
  read_until(c, p, "data: one\n\n");
  auto w = h.writer.get_future().get();
  // Each later event is written from this thread only after the previous one arrived.
  for (std::string event : {"data: two\n\n", "data: three\n\n", "data: [DONE]\n\n"}) {
    BOOST_TEST(p.get().body().find(event) == std::string::npos);
    w->write(event);
    read_until(c, p, event);
  }
  BOOST_TEST(!p.is_done());
  w->finish();
  while (!p.is_done())
    boost::beast::http::read_some(c.socket(), c.buffer(), p);
  BOOST_TEST(p.get().body() == "data: one\n\ndata: two\n\ndata: three\n\ndata: [DONE]\n\n");
  // The connection is reusable after a finished stream.
  BOOST_TEST(c.request(verb::get, "/health").result_int() == 200);
}

BOOST_FIXTURE_TEST_CASE(client_disconnect_fires_on_disconnect_and_counts_499, server_fixture) {
  held_routes h;
  start({}, [&](router& r) { h.add(r); });
  auto c = client();
  c.send(verb::get, "/hold");
  auto w = h.writer.get_future().get();
  c.close();
  BOOST_REQUIRE(h.disconnected.get_future().wait_for(5s) == std::future_status::ready);
  // Registered after the fact: runs at once. Answering a gone client is harmless.
  std::promise<void> late;
  w->on_disconnect([&late] { late.set_value(); });
  BOOST_TEST((late.get_future().wait_for(5s) == std::future_status::ready));
  w->send_json(200, "{}");
  w.reset();
  server->stop(1s);
  auto text = metrics->render();
  BOOST_TEST(text.find(R"(deepinfer_http_requests_total{route="/hold",method="GET",status="499"} 1)") !=
             std::string::npos, text);
}

BOOST_FIXTURE_TEST_CASE(on_disconnect_never_fires_after_a_complete_response, server_fixture) {
  std::atomic<int> fired{0};
  start({}, [&](router& r) {
    r.add("GET", "/x", [&](http_request, std::shared_ptr<response_writer> w) {
      w->on_disconnect([&] { ++fired; });
      w->send_json(200, "{}");
    });
  });
  {
    auto c = client();
    BOOST_TEST(c.request(verb::get, "/x").result_int() == 200);
  }
  server->stop(2s); // waits until the server saw the client close
  BOOST_TEST(fired.load() == 0);
}

BOOST_FIXTURE_TEST_CASE(stop_answers_in_flight_requests_then_closes_everything, server_fixture) {
  std::promise<void> started;
  start({}, [&](router& r) {
    r.add("GET", "/health", [](http_request, std::shared_ptr<response_writer> w) { w->send_json(200, "{}"); });
    r.add("GET", "/slow", [&](http_request, std::shared_ptr<response_writer> w) {
      started.set_value();
      later([w] {
        std::this_thread::sleep_for(300ms); // the work in flight when stop() begins
        w->send_json(200, R"({"done":true})");
      });
    });
  });
  auto idle = client();
  BOOST_TEST(idle.request(verb::get, "/health").result_int() == 200);
  auto busy = client();
  busy.send(verb::get, "/slow");
  started.get_future().wait();
  auto port = server->port();
  auto t0 = std::chrono::steady_clock::now();
  server->stop(2000ms);
  auto ms = elapsed_ms(t0);
  BOOST_TEST(ms >= 200);
  BOOST_TEST(ms < 1500);
  auto res = busy.read();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == R"({"done":true})");
  BOOST_TEST(!res.keep_alive());
  BOOST_TEST(busy.closed_by_server());
  BOOST_TEST(idle.closed_by_server());
  BOOST_CHECK_THROW(http_test_client{port}, boost::system::system_error);
}

BOOST_FIXTURE_TEST_CASE(stop_cuts_streams_that_outlive_the_deadline, server_fixture) {
  held_routes h;
  start({}, [&](router& r) { h.add(r); });
  auto c = client();
  c.send(verb::get, "/stream");
  stream_parser p;
  read_until(c, p, "data: one\n\n");
  auto w = h.writer.get_future().get();
  auto t0 = std::chrono::steady_clock::now();
  server->stop(300ms);
  auto ms = elapsed_ms(t0);
  BOOST_TEST(ms >= 280);
  BOOST_TEST(ms < 1000);
  BOOST_TEST((h.disconnected.get_future().wait_for(0s) == std::future_status::ready));
  boost::beast::error_code ec;
  while (!ec && !p.is_done())
    boost::beast::http::read_some(c.socket(), c.buffer(), p, ec);
  BOOST_TEST(!p.is_done()); // truncated, never a clean end
  // A writer that outlives its server stays safe to use and to drop.
  server.reset();
  w->write("data: late\n\n");
  w->finish();
  w.reset();
}

BOOST_FIXTURE_TEST_CASE(stop_under_load_answers_or_refuses_cleanly_within_the_deadline, server_fixture) {
  http_server::config cfg;
  cfg.threads = 2;
  start(cfg, [&](router& r) {
    r.add("GET", "/slow", [&](http_request, std::shared_ptr<response_writer> w) {
      later([w] {
        std::this_thread::sleep_for(20ms);
        w->send_json(200, "{}");
      });
    });
  });
  auto port = server->port();
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&, port] {
      // Until the server refuses new connections: every answer must be a whole 200.
      for (;;) {
        try {
          http_test_client c{port};
          for (;;) {
            auto res = c.request(verb::get, "/slow");
            (res.result_int() == 200 && res.body() == "{}" ? ok : bad)++;
          }
        } catch (const boost::system::system_error& e) {
          if (e.code() == boost::asio::error::connection_refused)
            return;
          // An idle connection closed under a new request is the keep-alive race every server
          // has; a response cut in the middle would be a shutdown bug.
          if (e.code() == boost::beast::http::error::partial_message)
            ++bad;
        }
      }
    });
  // Under load once answers flow (a fixed sleep can end before any did on a busy machine); the
  // deadline only bounds a broken run.
  for (auto until = std::chrono::steady_clock::now() + 30s; ok.load() < 8 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(5ms);
  auto t0 = std::chrono::steady_clock::now();
  server->stop(500ms);
  auto ms = elapsed_ms(t0);
  for (auto& t : clients)
    t.join();
  BOOST_TEST(ms < 650);
  BOOST_TEST(ok.load() > 0);
  BOOST_TEST(bad.load() == 0);
}

BOOST_FIXTURE_TEST_CASE(a_client_that_stops_reading_a_stream_is_cut_off, server_fixture) {
  held_routes h;
  http_server::config cfg;
  cfg.stream_buffer_limit_bytes = 256 * 1024;
  start(cfg, [&](router& r) { h.add(r); });
  auto c = client(); // sends the request, then never reads
  c.send(verb::get, "/stream");
  auto w = h.writer.get_future().get();
  auto disconnected = h.disconnected.get_future();
  // Far more than the kernel's socket buffers plus the limit hold.
  const std::string chunk(64 * 1024, 'x');
  for (int i = 0; i < 1024 && disconnected.wait_for(0s) != std::future_status::ready; ++i)
    w->write(chunk);
  BOOST_TEST((disconnected.wait_for(5s) == std::future_status::ready));
}

BOOST_AUTO_TEST_SUITE_END()
