#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/ip/address.hpp>

namespace deepinfer::actors::http {

/// An absolute http(s) URL split the way a client needs it (internal to image_fetcher; a small
/// RFC 3986 subset: no user info, the fragment dropped, the host lower-cased, IPv6 literals in
/// brackets).
struct fetch_url {
  bool tls = false;
  /// The host name or IP literal, without brackets.
  std::string host;
  uint16_t port = 80;
  /// The request target: path and query, "/" when the URL has no path.
  std::string target = "/";

  /// The Host header: the host (bracketed when IPv6) with the port when it is not the default.
  std::string host_header() const;
  /// The URL again, in normal form (for error messages and redirect loops).
  std::string str() const;

  /// Parses an absolute `http://` or `https://` URL; nullopt when it is something else, has user
  /// info, an empty host, a bad port, or bytes a request line cannot carry.
  static std::optional<fetch_url> parse(std::string_view url);
  /// The URL a redirect's Location names, taken relative to `base` (absolute, scheme-relative
  /// `//host/...`, absolute-path `/...`, or a relative path next to `base`'s last segment);
  /// nullopt when it is not a usable http(s) URL.
  static std::optional<fetch_url> resolve(const fetch_url& base, std::string_view location);
};

/// Whether `a` is an address an internet-facing fetcher must not reach: loopback, RFC 1918
/// private, carrier-grade NAT, link-local, unspecified, multicast and broadcast IPv4; loopback,
/// unspecified, unique-local, link-local and multicast IPv6 (IPv4-mapped ones as IPv4).
bool is_private_address(const boost::asio::ip::address& a);

} // namespace deepinfer::actors::http
