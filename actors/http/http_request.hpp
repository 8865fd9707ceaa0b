#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deepinfer::actors::http {

/// One parsed HTTP request as a handler sees it; it owns all its bytes (no Beast types), so a
/// handler may move it to another thread and answer later.
struct http_request {
  /// Request method as sent, e.g. "GET", "POST".
  std::string method;
  /// The raw request target, e.g. "/v1/models?limit=2".
  std::string target;
  /// `target` up to the first '?'.
  std::string path;
  /// `target` after the first '?' (no '?'); empty when there is none.
  std::string query;
  /// The registered route pattern that matched (e.g. "/v1/models/*"); it labels metrics.
  std::string route;
  /// Header fields in arrival order, names as sent.
  std::vector<std::pair<std::string, std::string>> headers;
  /// The whole request body (already bounded by the server's body limit).
  std::string body;
  /// HTTP version times ten: 11 for HTTP/1.1, 10 for HTTP/1.0.
  unsigned version = 11;
  /// Peer address as "ip:port", for logs.
  std::string remote;
  /// When its first bytes were at hand (its header read began) and when the whole request was
  /// (dispatched to its handler): the read and dispatch stages of a request's Server-Timing.
  std::chrono::steady_clock::time_point first_byte;
  std::chrono::steady_clock::time_point dispatched;

  /// The first header named `name` (case-insensitive); nullopt when absent.
  std::optional<std::string_view> header(std::string_view name) const;
};

} // namespace deepinfer::actors::http
