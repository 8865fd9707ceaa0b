#include "actors/http/http_server.hpp"

#include "actors/http/http_test_client.hpp"
#include "actors/http/metrics_endpoint.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <future>

using namespace deepinfer::actors::http;
using namespace deepinfer::actors::http::testing;
using namespace std::chrono_literals;
using boost::beast::http::verb;
namespace utf = boost::unit_test;

namespace {

/// The routes most tests use.
void basic_routes(router& r, server_fixture& f) {
  r.add("GET", "/health", [](http_request, std::shared_ptr<response_writer> w) { w->send_json(200, R"({"status":"ok"})"); });
  r.add("POST", "/echo", [](http_request req, std::shared_ptr<response_writer> w) {
    http_response res;
    res.content_type = "text/plain";
    res.body = req.body;
    res.headers.emplace_back("X-Route", req.route);
    res.headers.emplace_back("X-Content-Type", std::string{req.header("content-TYPE").value_or("none")});
    w->send(std::move(res));
  });
  r.add("GET", "/v1/models/*", [](http_request req, std::shared_ptr<response_writer> w) {
    w->send_json(200, nlohmann::json{{"path", req.path}, {"query", req.query}, {"route", req.route}}.dump());
  });
  r.add("GET", "/later", [&f](http_request, std::shared_ptr<response_writer> w) {
    auto io_thread = std::this_thread::get_id();
    f.later([w, io_thread] {
      std::this_thread::sleep_for(50ms); // the "actor" takes a while
      bool other = std::this_thread::get_id() != io_thread;
      w->send_json(200, nlohmann::json{{"answered_from_other_thread", other}}.dump());
    });
  });
  r.add("GET", "/drop", [](http_request, std::shared_ptr<response_writer>) {});
  r.add("GET", "/throw", [](http_request, std::shared_ptr<response_writer>) { throw std::runtime_error("boom"); });
}

nlohmann::json error_of(const response& res) {
  BOOST_TEST(res[boost::beast::http::field::content_type] == "application/json");
  return nlohmann::json::parse(res.body()).at("error");
}

} // namespace

BOOST_AUTO_TEST_SUITE(http_server_basics, *utf::timeout(60))

BOOST_FIXTURE_TEST_CASE(registered_routes_answer_with_body_and_headers, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  auto res = c.request(verb::get, "/health");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == R"({"status":"ok"})");
  BOOST_TEST(res[boost::beast::http::field::content_type] == "application/json");
  res = c.request(verb::post, "/echo", "hello body");
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello body");
  BOOST_TEST(res["X-Route"] == "/echo");
  BOOST_TEST(res["X-Content-Type"] == "application/json");
  res = c.request(verb::get, "/v1/models/deepseek-v4?x=1");
  auto j = nlohmann::json::parse(res.body());
  BOOST_TEST(j["path"] == "/v1/models/deepseek-v4");
  BOOST_TEST(j["query"] == "x=1");
  BOOST_TEST(j["route"] == "/v1/models/*");
}

BOOST_FIXTURE_TEST_CASE(unknown_route_gets_openai_shaped_404, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  auto res = c.request(verb::get, "/v1/nope");
  BOOST_TEST(res.result_int() == 404);
  auto e = error_of(res);
  BOOST_TEST(e["message"] == "Invalid URL (GET /v1/nope)");
  BOOST_TEST(e["type"] == "invalid_request_error");
  BOOST_TEST(e["code"] == "not_found");
  BOOST_TEST(e["param"].is_null());
  // The connection stays usable after an error.
  BOOST_TEST(c.request(verb::get, "/health").result_int() == 200);
}

BOOST_FIXTURE_TEST_CASE(wrong_method_gets_405_with_allow, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  auto res = c.request(verb::delete_, "/health");
  BOOST_TEST(res.result_int() == 405);
  BOOST_TEST(res[boost::beast::http::field::allow] == "GET");
  BOOST_TEST(error_of(res)["code"] == "method_not_allowed");
}

BOOST_FIXTURE_TEST_CASE(body_over_the_limit_gets_413_and_at_the_limit_passes, server_fixture) {
  http_server::config cfg;
  cfg.body_limit_bytes = 1024;
  start(cfg, [this](router& r) { basic_routes(r, *this); });
  auto ok = client();
  auto res = ok.request(verb::post, "/echo", std::string(1024, 'a'));
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body().size() == 1024u);
  auto big = client();
  res = big.request(verb::post, "/echo", std::string(4096, 'b'));
  BOOST_TEST(res.result_int() == 413);
  auto e = error_of(res);
  BOOST_TEST(e["code"] == "payload_too_large");
  BOOST_TEST(e["message"] == "request body exceeds 1024 bytes");
  BOOST_TEST(!res.keep_alive());
  BOOST_TEST(big.closed_by_server());
  server->stop(1s);
  BOOST_TEST(metrics->render().find(R"(deepinfer_http_requests_total{route="/echo",method="POST",status="413"} 1)") !=
             std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(expect_100_continue_gets_the_interim_answer_before_the_body, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  c.send_raw("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  BOOST_TEST(c.read().result_int() == 100); // the body is not sent yet
  c.send_raw("hello");
  auto res = c.read();
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == "hello");
}

BOOST_FIXTURE_TEST_CASE(malformed_request_line_gets_400_and_close, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  c.send_raw("NOT A VALID REQUEST\r\n\r\n");
  auto res = c.read();
  BOOST_TEST(res.result_int() == 400);
  BOOST_TEST(error_of(res)["code"] == "bad_request");
  BOOST_TEST(c.closed_by_server());
}

BOOST_FIXTURE_TEST_CASE(header_block_over_the_limit_gets_431, server_fixture) {
  http_server::config cfg;
  cfg.header_limit_bytes = 512;
  start(cfg, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  c.send_raw("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(1024, 'x') + "\r\n\r\n");
  BOOST_TEST(c.read().result_int() == 431);
}

BOOST_FIXTURE_TEST_CASE(keep_alive_and_pipelining_serve_many_requests_on_one_connection, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  for (int i = 0; i < 5; ++i) {
    auto res = c.request(verb::post, "/echo", "n" + std::to_string(i));
    BOOST_TEST(res.body() == "n" + std::to_string(i));
    BOOST_TEST(res.keep_alive());
  }
  // Three requests in one write; the answers come back in order, the slow one included.
  c.send_raw("GET /later HTTP/1.1\r\nHost: x\r\n\r\n"
             "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
             "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  BOOST_TEST(c.read().body() == R"({"answered_from_other_thread":true})");
  BOOST_TEST(c.read().body() == "abc");
  BOOST_TEST(c.read().body() == R"({"status":"ok"})");
}

BOOST_FIXTURE_TEST_CASE(async_handler_answers_later_from_another_thread, server_fixture) {
  http_server::config cfg;
  cfg.threads = 2;
  start(cfg, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  auto t0 = std::chrono::steady_clock::now();
  auto res = c.request(verb::get, "/later");
  BOOST_TEST(elapsed_ms(t0) >= 50);
  BOOST_TEST(res.result_int() == 200);
  BOOST_TEST(res.body() == R"({"answered_from_other_thread":true})");
}

BOOST_FIXTURE_TEST_CASE(dropped_writer_and_throwing_handler_get_500, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  auto res = c.request(verb::get, "/drop");
  BOOST_TEST(res.result_int() == 500);
  BOOST_TEST(error_of(res)["type"] == "server_error");
  res = c.request(verb::get, "/throw");
  BOOST_TEST(res.result_int() == 500);
  BOOST_TEST(error_of(res)["message"] == "internal error: boom");
  BOOST_TEST(c.request(verb::get, "/health").result_int() == 200);
}

BOOST_FIXTURE_TEST_CASE(start_reports_address_in_use_as_a_value, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  http_server::config cfg;
  cfg.port = server->port();
  http_server second{cfg, router{}};
  auto ec = second.start();
  BOOST_TEST((ec == std::errc::address_in_use), ec.message());
  BOOST_TEST(second.port() == 0);
  http_server::config bad;
  bad.host = "no-such-host.invalid";
  BOOST_TEST(static_cast<bool>(http_server{bad, router{}}.start()));
}

BOOST_FIXTURE_TEST_CASE(idle_or_slow_clients_are_closed_after_the_request_timeout, server_fixture) {
  http_server::config cfg;
  cfg.request_timeout = 200ms;
  start(cfg, [this](router& r) { basic_routes(r, *this); });
  auto slow = client();
  slow.send_raw("GET /health HTTP/1.1\r\n"); // never finishes its header
  auto t0 = std::chrono::steady_clock::now();
  BOOST_TEST(slow.closed_by_server());
  BOOST_TEST(elapsed_ms(t0) >= 150);
  auto idle = client();
  BOOST_TEST(idle.request(verb::get, "/health").result_int() == 200);
  BOOST_TEST(idle.closed_by_server()); // keep-alive idle past the timeout
}

BOOST_FIXTURE_TEST_CASE(server_records_request_counts_and_latencies, server_fixture) {
  start({}, [this](router& r) {
    basic_routes(r, *this);
    r.add("GET", "/metrics", metrics_endpoint(metrics));
  });
  {
    auto c = client();
    auto scrape = c.request(verb::get, "/metrics");
    BOOST_TEST(scrape.result_int() == 200);
    BOOST_TEST(scrape[boost::beast::http::field::content_type] == "text/plain; version=0.0.4; charset=utf-8");
    BOOST_TEST(scrape.body().find("deepinfer_http_open_connections 1\n") != std::string::npos, scrape.body());
    c.request(verb::get, "/health");
    c.request(verb::get, "/health");
    c.request(verb::get, "/missing");
    c.request(verb::put, "/health");
  }
  server->stop(2s); // the last response is recorded once its write completes: let it settle
  auto text = metrics->render();
  auto has = [&](const std::string& line) {
    bool found = text.find(line + "\n") != std::string::npos;
    BOOST_TEST(found, "missing line: " << line << "\nin:\n" << text);
  };
  has(R"(deepinfer_http_requests_total{route="/health",method="GET",status="200"} 2)");
  has(R"(deepinfer_http_requests_total{route="unmatched",method="GET",status="404"} 1)");
  has(R"(deepinfer_http_requests_total{route="unmatched",method="PUT",status="405"} 1)");
  has(R"(deepinfer_http_request_duration_seconds_count{route="/health",method="GET"} 2)");
  has(R"(deepinfer_http_request_duration_seconds_bucket{route="/health",method="GET",le="+Inf"} 2)");
  has("# TYPE deepinfer_http_request_duration_seconds histogram");
  has(R"(deepinfer_http_requests_total{route="/metrics",method="GET",status="200"} 1)");
  has("deepinfer_http_open_connections 0");
}

BOOST_AUTO_TEST_SUITE_END()
