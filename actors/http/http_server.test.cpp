#include "actors/http/http_server.hpp"

#include "actors/http/http_test_client.hpp"
#include "actors/http/metrics_endpoint.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <atomic>
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
  BOOST_TEST(res[boost::beast::http::field::allow] == "GET, HEAD");
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
  c.send_raw("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
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
  c.send_raw("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(1024, 'x') + "\r\n\r\n");
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
  c.send_raw("GET /later HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
             "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\nabc"
             "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  BOOST_TEST(c.read().body() == R"({"answered_from_other_thread":true})");
  BOOST_TEST(c.read().body() == "abc");
  BOOST_TEST(c.read().body() == R"({"status":"ok"})");
}

BOOST_FIXTURE_TEST_CASE(head_answers_like_get_without_a_body_and_keeps_the_connection_usable, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  // HEAD on a GET route (the async one too), then HEAD on a POST-only route, then GET, pipelined:
  // had a body followed a HEAD's head, the client would read it as the next response.
  c.send_raw("HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
             "HEAD /later HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
             "HEAD /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
             "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  auto head_of = [&] {
    boost::beast::http::response_parser<boost::beast::http::string_body> p;
    p.skip(true); // a HEAD's response: the parser must not wait for the body its length names
    boost::beast::http::read(c.socket(), c.buffer(), p);
    return p.release();
  };
  auto health = head_of();
  BOOST_TEST(health.result_int() == 200);
  BOOST_TEST(health[boost::beast::http::field::content_length] == std::to_string(std::string{R"({"status":"ok"})"}.size()));
  BOOST_TEST(head_of().result_int() == 200);
  auto post_only = head_of();
  BOOST_TEST(post_only.result_int() == 405);
  BOOST_TEST(post_only[boost::beast::http::field::allow] == "POST");
  auto get = c.read();
  BOOST_TEST(get.result_int() == 200);
  BOOST_TEST(get.body() == R"({"status":"ok"})");
}

BOOST_FIXTURE_TEST_CASE(an_absolute_form_target_is_routed_by_its_path, server_fixture) {
  start({}, [this](router& r) { basic_routes(r, *this); });
  auto c = client();
  c.send_raw("GET http://127.0.0.1/v1/models/deepseek-v4?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  auto res = c.read();
  BOOST_TEST_REQUIRE(res.result_int() == 200);
  auto j = nlohmann::json::parse(res.body());
  BOOST_TEST(j["path"] == "/v1/models/deepseek-v4");
  BOOST_TEST(j["query"] == "x=1");
  c.send_raw("GET http://127.0.0.1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  BOOST_TEST(c.read().result_int() == 404); // the path "/", which serves nothing here
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

BOOST_FIXTURE_TEST_CASE(stalled_headers_and_bodies_get_408_and_idle_connections_close, server_fixture) {
  http_server::config cfg;
  cfg.idle_timeout = 300ms;
  cfg.header_timeout = 200ms;
  cfg.body_timeout = 200ms;
  start(cfg, [this](router& r) { basic_routes(r, *this); });
  auto slow = client();
  slow.send_raw("GET /health HTTP/1.1\r\n"); // never finishes its header
  auto t0 = std::chrono::steady_clock::now();
  auto res = slow.read();
  BOOST_TEST(res.result_int() == 408);
  BOOST_TEST(elapsed_ms(t0) >= 150);
  BOOST_TEST(error_of(res)["code"] == "request_timeout");
  BOOST_TEST(slow.closed_by_server());
  // Half a body, then nothing: 408 that says how much is missing.
  auto half = client();
  half.send_raw("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":");
  res = half.read();
  BOOST_TEST(res.result_int() == 408);
  BOOST_TEST(error_of(res)["message"].get<std::string>().find("95 bytes still missing") != std::string::npos,
             error_of(res)["message"]);
  // Keep-alive idle past the idle timeout, and connected but silent: closed without an answer.
  auto idle = client();
  BOOST_TEST(idle.request(verb::get, "/health").result_int() == 200);
  BOOST_TEST(idle.closed_by_server());
  auto silent = client();
  t0 = std::chrono::steady_clock::now();
  BOOST_TEST(silent.closed_by_server());
  BOOST_TEST(elapsed_ms(t0) >= 250);
}

BOOST_FIXTURE_TEST_CASE(host_header_must_name_this_server_on_loopback, server_fixture) {
  http_server::config cfg;
  cfg.allowed_hosts = {"deepinfer.internal"};
  start(cfg, [this](router& r) { basic_routes(r, *this); });
  auto ask = [&](const std::string& host) {
    auto c = client();
    c.send_raw("GET /health HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    return c.read();
  };
  for (auto ok : {"127.0.0.1:8000", "localhost", "LOCALHOST:1", "[::1]:8000", "127.3.4.5", "deepinfer.internal:80"})
    BOOST_TEST(ask(ok).result_int() == 200, ok);
  auto res = ask("evil.example:8000"); // DNS rebinding: the name resolves to 127.0.0.1 now
  BOOST_TEST(res.result_int() == 403);
  BOOST_TEST(error_of(res)["message"].get<std::string>().find("allowed_hosts") != std::string::npos);
  BOOST_TEST(ask("127.0.0.1.evil.example").result_int() == 403);
  // HTTP/1.0 without Host is not a browser.
  auto old = client();
  old.send_raw("GET /health HTTP/1.0\r\n\r\n");
  BOOST_TEST(old.read().result_int() == 200);
}

BOOST_FIXTURE_TEST_CASE(no_cors_headers_unless_an_origin_is_configured, server_fixture) {
  http_server::config cfg;
  cfg.cors_origins = {"https://app.example"};
  start(cfg, [this](router& r) { basic_routes(r, *this); });
  auto ask = [&](const std::string& extra, const std::string& method = "GET") {
    auto c = client();
    c.send_raw(method + " /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + "\r\n");
    return c.read();
  };
  auto res = ask("Origin: https://app.example\r\n");
  BOOST_TEST(res["Access-Control-Allow-Origin"] == "https://app.example");
  res = ask("Origin: https://evil.example\r\n");
  BOOST_TEST((res.find("Access-Control-Allow-Origin") == res.end()));
  res = ask("Origin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n"
            "Access-Control-Request-Headers: content-type, authorization\r\n", "OPTIONS");
  BOOST_TEST(res.result_int() == 204);
  BOOST_TEST(res["Access-Control-Allow-Headers"] == "content-type, authorization");
  // A server without cors_origins answers no preflight.
  server.reset();
  start({}, [this](router& r) { basic_routes(r, *this); });
  res = ask("Origin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n", "OPTIONS");
  BOOST_TEST(res.result_int() == 405);
  BOOST_TEST((res.find("Access-Control-Allow-Origin") == res.end()));
}

BOOST_FIXTURE_TEST_CASE(built_in_errors_use_the_error_format_of_the_path, server_fixture) {
  http_server::config cfg;
  cfg.body_limit_bytes = 64;
  start(cfg, [this](router& r) {
    basic_routes(r, *this);
    r.add("POST", "/v1/messages", [](http_request, std::shared_ptr<response_writer> w) { w->send_json(200, "{}"); });
    r.set_error_format("/v1/messages", [](unsigned status, std::string_view message, std::string_view) {
      return nlohmann::json{{"type", "error"}, {"error", {{"type", std::to_string(status)}, {"message", message}}}}.dump();
    });
  });
  auto c = client();
  auto res = c.request(verb::get, "/v1/messages");
  BOOST_TEST(res.result_int() == 405);
  BOOST_TEST(nlohmann::json::parse(res.body())["type"] == "error");
  auto big = client();
  big.send_raw("POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n");
  res = big.read();
  BOOST_TEST(res.result_int() == 413);
  BOOST_TEST(nlohmann::json::parse(res.body())["error"]["type"] == "413");
  BOOST_TEST(error_of(c.request(verb::get, "/v1/nope"))["code"] == "not_found"); // others: OpenAI's
}

BOOST_FIXTURE_TEST_CASE(at_the_connection_cap_idle_connections_make_room_and_health_stays_reachable, server_fixture) {
  http_server::config cfg;
  cfg.max_connections = 4;
  std::atomic<int> holding{0};
  std::promise<void> release;
  auto released = release.get_future().share();
  start(cfg, [&](router& r) {
    basic_routes(r, *this);
    r.add("GET", "/hold", [&, released](http_request, std::shared_ptr<response_writer> w) {
      ++holding;
      later([w, released] {
        released.wait(); // keeps its connection busy until the test lets go
        w->send_json(200, "{}");
      });
    });
  });
  // A flood of silent connections: each one past the cap closes the longest-idle one.
  std::vector<std::unique_ptr<http_test_client>> flood;
  for (int i = 0; i < 12; ++i)
    flood.push_back(std::make_unique<http_test_client>(server->port()));
  auto fresh = client();
  BOOST_TEST(fresh.request(verb::get, "/health").result_int() == 200);
  BOOST_TEST(flood.front()->closed_by_server());
  fresh.close();
  flood.clear();
  // Every slot busy: a new connection may still ask for /health, anything else gets 503.
  std::vector<std::unique_ptr<http_test_client>> busy;
  for (int i = 0; i < 4; ++i) {
    busy.push_back(std::make_unique<http_test_client>(server->port()));
    busy.back()->send(verb::get, "/hold");
  }
  for (auto t0 = std::chrono::steady_clock::now(); holding < 4 && elapsed_ms(t0) < 10000;)
    std::this_thread::sleep_for(5ms);
  BOOST_REQUIRE(holding == 4);
  auto extra = client();
  auto res = extra.request(verb::get, "/health");
  BOOST_TEST(res.result_int() == 200);
  auto other = client();
  res = other.request(verb::post, "/echo", "x");
  BOOST_TEST(res.result_int() == 503);
  BOOST_TEST(res["Retry-After"] == "1");
  release.set_value();
  for (auto& b : busy)
    BOOST_TEST(b->read().result_int() == 200);
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
