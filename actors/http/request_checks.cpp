#include "actors/http/request_checks.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>

namespace deepinfer::actors::http {

namespace {

std::string lower(std::string_view s) {
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

/// The name part of a Host value: `[::1]:8000` -> `::1`, `localhost:8000` -> `localhost`.
std::string host_name(std::string_view host) {
  host = trim(host);
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    return lower(host.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1));
  }
  return lower(host.substr(0, host.find(':')));
}

bool is_loopback_name(const std::string& name) {
  if (name == "localhost" || name.ends_with(".localhost"))
    return true;
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address(name, ec);
  return !ec && a.is_loopback();
}

} // namespace

host_policy::host_policy(std::string listen_host, std::vector<std::string> allowed)
  : listen_(host_name(listen_host)), loopback_(is_loopback_name(listen_)) {
  for (auto& a : allowed)
    allowed_.push_back(host_name(a));
}

bool host_policy::allows(std::optional<std::string_view> host) const {
  if (!host)
    return true;
  const auto name = host_name(*host);
  if (name == listen_ || std::find(allowed_.begin(), allowed_.end(), name) != allowed_.end())
    return true;
  if (loopback_)
    return is_loopback_name(name);
  return allowed_.empty();
}

std::string host_policy::explain(std::string_view host) const {
  std::string s = "The Host header '" + std::string{host} + "' is not allowed: this server";
  s += loopback_ ? " listens on a loopback address and answers loopback names (localhost, 127.0.0.1, [::1])"
                 : " answers only the names it is configured with";
  if (!allowed_.empty()) {
    s += " and";
    for (std::size_t i = 0; i < allowed_.size(); ++i)
      s += (i ? ", " : " ") + allowed_[i];
  }
  return s + "; to serve this name, add it to the manifest's http.allowed_hosts (or --allowed-host " +
         host_name(host) + ").";
}

std::optional<std::string> json_body_problem(const http_request& req) {
  auto type = req.header("content-type");
  if (!type)
    return "The request has no Content-Type; send the JSON body with 'Content-Type: application/json'.";
  const auto semi = type->find(';');
  const auto media = lower(trim(type->substr(0, semi)));
  if (media != "application/json")
    return "Unsupported Content-Type '" + std::string{*type} +
           "'; send the JSON body with 'Content-Type: application/json'.";
  // Parameters: only a UTF-8 charset means anything to us.
  for (auto rest = semi == std::string_view::npos ? std::string_view{} : type->substr(semi + 1); !rest.empty();) {
    const auto next = rest.find(';');
    const auto param = trim(rest.substr(0, next));
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    const auto eq = param.find('=');
    if (eq == std::string_view::npos || lower(trim(param.substr(0, eq))) != "charset")
      continue;
    auto value = lower(trim(param.substr(eq + 1)));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    if (value != "utf-8" && value != "utf8")
      return "Unsupported charset '" + value + "'; JSON bodies must be UTF-8 (charset=utf-8).";
  }
  if (auto enc = req.header("content-encoding"); enc && lower(trim(*enc)) != "identity" && !trim(*enc).empty())
    return "Unsupported Content-Encoding '" + std::string{*enc} + "'; send the body uncompressed.";
  return std::nullopt;
}

std::string api_key_of(const http_request& req) {
  if (auto auth = req.header("authorization")) {
    auto v = trim(*auth);
    if (v.size() > 7 && lower(v.substr(0, 7)) == "bearer ")
      return std::string{trim(v.substr(7))};
  }
  if (auto key = req.header("x-api-key"))
    return std::string{trim(*key)};
  return {};
}

bool key_matches(std::string_view key, const std::vector<std::string>& keys) {
  bool found = false;
  for (const auto& k : keys) {
    unsigned char diff = k.size() == key.size() ? 0 : 1;
    for (std::size_t i = 0; i < k.size(); ++i)
      diff |= static_cast<unsigned char>(k[i] ^ (i < key.size() ? key[i] : 0));
    found = found || diff == 0;
  }
  return found;
}

} // namespace deepinfer::actors::http
