#pragma once

#include <string>
#include <utility>
#include <vector>

namespace deepinfer::actors::http {

/// A complete (non-streamed) HTTP response. The server adds Content-Length and Connection.
struct http_response {
  /// HTTP status code, e.g. 200.
  unsigned status = 200;
  /// Value of the Content-Type header.
  std::string content_type = "application/json";
  /// The body, sent as is.
  std::string body;
  /// Extra header fields (name, value), sent after Content-Type.
  std::vector<std::pair<std::string, std::string>> headers;
};

} // namespace deepinfer::actors::http
