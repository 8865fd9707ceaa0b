#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deepinfer {

/// A `HOST:PORT` endpoint split in two (an HTTP listener, an RDMA listener, a CAF node).
struct host_port {
  std::string host;
  uint16_t port = 0;
};

/// Parses `HOST:PORT` or `[V6]:PORT` (an IPv6 host must be bracketed); nullopt when malformed,
/// the host is empty or the port is 0 or above 65535. The one parser of the project's endpoints.
inline std::optional<host_port> parse_host_port(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return std::nullopt;
  auto host = text.substr(0, colon);
  auto port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']')
      return std::nullopt;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;
  }
  uint16_t port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port == 0)
    return std::nullopt;
  return host_port{std::string{host}, port};
}

/// `HOST:PORT`, bracketing an IPv6 host (what `parse_host_port` reads back).
inline std::string format_host_port(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos)
    return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

} // namespace deepinfer
