#include "actors/http/fetch_url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace deepinfer::actors::http {

namespace {

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size())
    return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i])
      return false;
  return true;
}

/// Bytes a request line or Host header must never carry (CR/LF would split the request, spaces
/// end the target, controls and non-ASCII have no place in a URL sent on the wire).
bool wire_safe(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7f;
  });
}

} // namespace

std::string fetch_url::host_header() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string h = v6 ? "[" + host + "]" : host;
  if (port != (tls ? 443 : 80))
    h += ":" + std::to_string(port);
  return h;
}

std::string fetch_url::str() const {
  return std::string(tls ? "https://" : "http://") + host_header() + target;
}

std::optional<fetch_url> fetch_url::parse(std::string_view url) {
  fetch_url out;
  if (starts_with_ci(url, "https://")) {
    out.tls = true;
    out.port = 443;
    url.remove_prefix(8);
  } else if (starts_with_ci(url, "http://")) {
    url.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  if (auto hash = url.find('#'); hash != std::string_view::npos)
    url = url.substr(0, hash);
  if (!wire_safe(url))
    return std::nullopt;
  const auto path_at = url.find_first_of("/?");
  std::string_view authority = url.substr(0, path_at);
  if (path_at != std::string_view::npos) {
    out.target = std::string(url.substr(path_at));
    if (out.target.front() == '?')
      out.target.insert(out.target.begin(), '/');
  }
  if (authority.find('@') != std::string_view::npos)
    return std::nullopt; // credentials in a URL: never sent on a client's behalf
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    out.host = std::string(authority.substr(1, close - 1));
    auto rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return std::nullopt;
      port = rest.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos)
      port = authority.substr(colon + 1);
  }
  if (out.host.empty())
    return std::nullopt;
  std::transform(out.host.begin(), out.host.end(), out.host.begin(),
                 [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  if (!port.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
      return std::nullopt;
    out.port = static_cast<uint16_t>(value);
  }
  return out;
}

std::optional<fetch_url> fetch_url::resolve(const fetch_url& base, std::string_view location) {
  if (location.empty())
    return std::nullopt;
  if (starts_with_ci(location, "http://") || starts_with_ci(location, "https://"))
    return parse(location);
  if (location.find("://") != std::string_view::npos)
    return std::nullopt; // another scheme (ftp:, file:, ...)
  if (location.substr(0, 2) == "//")
    return parse(std::string(base.tls ? "https:" : "http:") + std::string(location));
  std::string target;
  if (location.front() == '/' || location.front() == '?') {
    target = location.front() == '?' ? base.target.substr(0, base.target.find('?')) + std::string(location)
                                     : std::string(location);
  } else {
    // A relative path: next to the base path's last segment (dot segments are left to the
    // origin, which resolves them itself).
    const auto path = base.target.substr(0, base.target.find('?'));
    target = path.substr(0, path.rfind('/') + 1) + std::string(location);
  }
  return parse(std::string(base.tls ? "https://" : "http://") + base.host_header() + target);
}

bool is_private_address(const boost::asio::ip::address& a) {
  if (a.is_v6()) {
    const auto v6 = a.to_v6();
    if (v6.is_v4_mapped())
      return is_private_address(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6));
    const auto b = v6.to_bytes();
    return v6.is_loopback() || v6.is_unspecified() || v6.is_link_local() || v6.is_multicast() ||
           (b[0] & 0xfe) == 0xfc; // fc00::/7, unique local
  }
  const auto v = a.to_v4().to_uint();
  auto in = [v](uint32_t net, int bits) { return (v >> (32 - bits)) == (net >> (32 - bits)); };
  return in(0x00000000, 8) ||   // 0.0.0.0/8, "this network"
         in(0x0a000000, 8) ||   // 10/8
         in(0x64400000, 10) ||  // 100.64/10, carrier-grade NAT
         in(0x7f000000, 8) ||   // 127/8, loopback
         in(0xa9fe0000, 16) ||  // 169.254/16, link-local (cloud metadata services live here)
         in(0xac100000, 12) ||  // 172.16/12
         in(0xc0a80000, 16) ||  // 192.168/16
         in(0xe0000000, 4) ||   // 224/4, multicast
         v == 0xffffffff;       // broadcast
}

} // namespace deepinfer::actors::http
