#pragma once

#include "actors/http/metrics_registry.hpp"
#include "actors/http/router.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace deepinfer::actors::http {

/// An asynchronous HTTP/1.1 server (Boost.Beast/Asio): one io_context run by `threads` threads,
/// one strand per connection, keep-alive and pipelining, requests dispatched through a `router`.
///
/// Built-in answers, JSON in the error shape the router gives the path (router::set_error_format;
/// OpenAI's by default): unknown path 404, known path with another method 405 (with Allow),
/// malformed request 400, Host not allowed 403, a stalled header or body 408, body over the
/// limit 413, header over the limit 431, a handler that throws or drops its writer 500, 503 at
/// the connection cap. With a `metrics_registry` it records
/// `deepinfer_http_requests_total{route,method,status}`,
/// `deepinfer_http_request_duration_seconds{route,method}` (to the last byte of the response) and
/// `deepinfer_http_open_connections`. Unmatched requests use route="unmatched", unparseable ones
/// route="invalid"; a response cut short by a disconnect counts as status 499.
class http_server {
public:
  /// Listening and limits.
  struct config {
    /// Address to listen on: an IP literal or a resolvable name.
    std::string host = "127.0.0.1";
    /// Port; 0 picks a free one (read it back with `port()`).
    uint16_t port = 8000;
    /// Largest request body accepted; larger ones get 413 (before the body is read when the
    /// client sends Content-Length).
    std::size_t body_limit_bytes = std::size_t{8} << 20;
    /// Largest request line plus header block; larger ones get 431.
    std::size_t header_limit_bytes = std::size_t{64} << 10;
    /// Most bytes a streamed response may have queued but unsent (a client that stopped
    /// reading); past it the connection is closed and on_disconnect fires. Full responses sent
    /// with `send` are not limited.
    std::size_t stream_buffer_limit_bytes = std::size_t{16} << 20;
    /// Threads running the io_context (at least 1).
    unsigned threads = 1;
    /// Most open client connections. At the cap a new connection closes the one idle longest
    /// (keep-alive, or connected and silent); when none is idle it may still ask for
    /// `health_path` (a few over the cap are read for that), anything else gets a 503.
    std::size_t max_connections = 4096;
    /// Served even at the connection cap.
    std::string health_path = "/health";
    /// How long a connection may wait for the first byte of its next request (after connecting
    /// or after a response); then it is closed.
    std::chrono::milliseconds idle_timeout{30000};
    /// How long a request line and header may take from their first byte; then 408.
    std::chrono::milliseconds header_timeout{10000};
    /// How long a request body may take after its header; then 408 (a stalled half-body).
    std::chrono::milliseconds body_timeout{30000};
    /// Extra Host names answered (see host_policy: on a loopback address only loopback names
    /// and the listening host pass by default).
    std::vector<std::string> allowed_hosts;
    /// Origins (`https://app.example`, or `*`) that get CORS headers and preflight answers;
    /// empty: no CORS headers at all, so browsers keep other origins out.
    std::vector<std::string> cors_origins;
  };

  /// Takes the routes by value; `metrics` may be null (then nothing is recorded).
  http_server(config cfg, router routes, std::shared_ptr<metrics_registry> metrics = nullptr);

  /// Stops with a zero deadline if still running.
  ~http_server();

  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds, listens and starts the I/O threads. Returns an empty error_code on success, else why
  /// not (e.g. `std::errc::address_in_use`, or a resolver error for a bad host); it never throws.
  /// Call once.
  std::error_code start();

  /// The bound port once `start()` succeeded, else 0.
  uint16_t port() const;

  /// Graceful shutdown: stops accepting, closes idle connections, lets in-flight responses
  /// (streams included) complete until `deadline` from now, then closes what is left (firing its
  /// on_disconnect callbacks) and joins the I/O threads. Returns within about `deadline` + 100 ms.
  /// Idempotent and callable from any thread except the server's own I/O threads (a handler
  /// must not call it); from a signal, call it on the thread that waits for the signal
  /// (`sigwait`, an asio::signal_set on another io_context), never inside a raw signal handler.
  void stop(std::chrono::milliseconds deadline);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace deepinfer::actors::http
