#pragma once

// Test helper only (included by *.test.cpp): a blocking Beast client on loopback.

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "actors/http/http_server.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace deepinfer::actors::http::testing {

namespace bhttp = boost::beast::http;
using response = bhttp::response<bhttp::string_body>;

/// Milliseconds since `t0` on the steady clock.
inline long elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return static_cast<long>(
    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
}

/// One client connection to 127.0.0.1:`port`; every call blocks.
class http_test_client {
public:
  /// Connects at once.
  explicit http_test_client(uint16_t port) : socket_(ioc_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }

  /// Sends `bytes` as they are.
  void send_raw(std::string_view bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes.data(), bytes.size())); }

  /// Sends one request (HTTP/1.1, keep-alive unless `close`).
  void send(bhttp::verb method, std::string target, std::string body = {}, bool close = false) {
    bhttp::request<bhttp::string_body> req{method, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.keep_alive(!close);
    if (!body.empty() || method == bhttp::verb::post) {
      req.set(bhttp::field::content_type, "application/json");
      req.body() = std::move(body);
      req.prepare_payload();
    }
    bhttp::write(socket_, req);
  }

  /// Reads one complete response.
  response read() {
    response res;
    bhttp::read(socket_, buffer_, res);
    return res;
  }

  /// `send` then `read`.
  response request(bhttp::verb method, std::string target, std::string body = {}) {
    send(method, std::move(target), std::move(body));
    return read();
  }

  /// True when the server closed the connection: the next read hits end of stream (or reset)
  /// with no byte of a response.
  bool closed_by_server() {
    boost::beast::error_code ec;
    response res;
    bhttp::read(socket_, buffer_, res, ec);
    return ec == bhttp::error::end_of_stream || ec == boost::asio::error::eof ||
           ec == boost::asio::error::connection_reset;
  }

  /// Closes the client side.
  void close() {
    boost::beast::error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  /// The raw socket and buffer, for incremental (streamed) reads.
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  boost::beast::flat_buffer& buffer() { return buffer_; }

private:
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

/// A started server on an ephemeral loopback port with its metrics, plus threads that handlers
/// may spawn to answer later (joined before the server goes away).
struct server_fixture {
  std::shared_ptr<metrics_registry> metrics = std::make_shared<metrics_registry>();
  std::unique_ptr<http_server> server;
  std::mutex threads_mutex;
  std::vector<std::thread> threads;

  /// Starts a server with `cfg` (port forced to 0) and the routes `setup` adds.
  void start(http_server::config cfg, const std::function<void(router&)>& setup) {
    router routes;
    setup(routes);
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    server = std::make_unique<http_server>(cfg, std::move(routes), metrics);
    auto ec = server->start();
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    BOOST_REQUIRE(server->port() != 0);
  }

  /// Runs `fn` on a new thread (a stand-in for an actor answering later).
  void later(std::function<void()> fn) {
    std::lock_guard guard{threads_mutex};
    threads.emplace_back(std::move(fn));
  }

  /// A new client connection to the server.
  http_test_client client() { return http_test_client{server->port()}; }

  ~server_fixture() {
    std::vector<std::thread> joined;
    {
      std::lock_guard guard{threads_mutex};
      joined.swap(threads);
    }
    for (auto& t : joined)
      t.join();
    if (server)
      server->stop(std::chrono::milliseconds{0});
  }
};

} // namespace deepinfer::actors::http::testing
