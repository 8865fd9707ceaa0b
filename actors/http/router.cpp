#include "actors/http/router.hpp"

#include "actors/http/openai_error.hpp"

#include <algorithm>

namespace deepinfer::actors::http {

void router::add(std::string method, std::string pattern, handler fn) {
  for (auto& e : entries_) {
    if (e.method == method && e.pattern == pattern) {
      e.fn = std::move(fn);
      return;
    }
  }
  entries_.push_back(entry{std::move(method), std::move(pattern), std::move(fn)});
}

bool router::matches(std::string_view pattern, std::string_view path) {
  if (pattern.size() >= 2 && pattern.substr(pattern.size() - 2) == "/*") {
    auto prefix = pattern.substr(0, pattern.size() - 1); // keeps the '/'
    return path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix;
  }
  return pattern == path;
}

router::match router::find(std::string_view method, std::string_view path) const {
  // Specificity: an exact pattern beats any prefix; among prefixes the longest wins.
  auto rank = [](const std::string& pattern) {
    bool prefix = pattern.size() >= 2 && pattern.substr(pattern.size() - 2) == "/*";
    return prefix ? pattern.size() : std::string::npos;
  };
  const entry* best = nullptr;
  std::size_t best_rank = 0;
  std::vector<std::string_view> allow;
  for (const auto& e : entries_) {
    if (!matches(e.pattern, path))
      continue;
    // HEAD is GET without the body (RFC 9110 9.3.2): every GET route answers it; the
    // connection leaves the body out.
    if (e.method != method && !(method == "HEAD" && e.method == "GET")) {
      if (std::find(allow.begin(), allow.end(), e.method) == allow.end())
        allow.push_back(e.method);
      if (e.method == "GET" && std::find(allow.begin(), allow.end(), "HEAD") == allow.end())
        allow.push_back("HEAD");
      continue;
    }
    if (!best || rank(e.pattern) > best_rank) {
      best = &e;
      best_rank = rank(e.pattern);
    }
  }
  match m;
  if (best) {
    m.result = outcome::found;
    m.fn = &best->fn;
    m.route = best->pattern;
  } else if (!allow.empty()) {
    m.result = outcome::method_not_allowed;
    for (auto x : allow)
      m.allow += (m.allow.empty() ? "" : ", ") + std::string{x};
  }
  return m;
}

void router::set_error_format(std::string pattern, error_format fn) {
  formats_.emplace_back(std::move(pattern), std::move(fn));
}

std::string router::error_body(std::string_view path, unsigned status, std::string_view message,
                               std::string_view code) const {
  const error_format* best = nullptr;
  std::size_t best_len = 0;
  // A prefix pattern's format also covers the path it is under: "/v1/messages/*" is
  // "/v1/messages", "/v1/messages/" and everything below.
  auto covers = [&](std::string_view pattern) {
    if (pattern.size() >= 2 && pattern.substr(pattern.size() - 2) == "/*") {
      auto base = pattern.substr(0, pattern.size() - 2);
      return path.substr(0, base.size()) == base && (path.size() == base.size() || path[base.size()] == '/');
    }
    return pattern == path;
  };
  for (const auto& [pattern, fn] : formats_)
    if (covers(pattern) && (!best || pattern.size() > best_len)) {
      best = &fn;
      best_len = pattern.size();
    }
  if (best)
    return (*best)(status, message, code);
  return openai_error(message, openai_error_type(status), code.empty() ? std::nullopt : std::optional{code});
}

} // namespace deepinfer::actors::http
