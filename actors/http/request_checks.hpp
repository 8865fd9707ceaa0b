#pragma once

#include "actors/http/http_request.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::actors::http {

/// Which Host headers a server answers (DNS rebinding: a page on evil.example whose name now
/// resolves to 127.0.0.1 must not reach a loopback server). Bound to a loopback address, only
/// loopback names (`localhost`, `127.x.x.x`, `[::1]`), the listening host and `allowed` pass,
/// with any port; bound elsewhere, everything passes unless `allowed` is set, then only those
/// and the listening host. A request without Host is not from a browser and passes.
class host_policy {
public:
  host_policy(std::string listen_host, std::vector<std::string> allowed);
  /// Whether a request with this Host header (nullopt: none) is answered.
  bool allows(std::optional<std::string_view> host) const;
  /// One sentence for the 403: what is allowed and how to allow more.
  std::string explain(std::string_view host) const;

private:
  std::string listen_;
  std::vector<std::string> allowed_;
  bool loopback_ = false;
};

/// Why the body of `req` cannot be read as JSON, as a sentence for a 415, or nullopt: the
/// Content-Type must be `application/json` (parameters allowed; a charset must be UTF-8) and
/// the Content-Encoding absent or `identity`.
std::optional<std::string> json_body_problem(const http_request& req);

/// The API key a request carries: `Authorization: Bearer KEY` (OpenAI) or `x-api-key: KEY`
/// (Anthropic); empty when none.
std::string api_key_of(const http_request& req);

/// Whether `key` is one of `keys`, comparing every byte of every key (no early exit that would
/// time how much of a guess was right).
bool key_matches(std::string_view key, const std::vector<std::string>& keys);

} // namespace deepinfer::actors::http
