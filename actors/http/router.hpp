#pragma once

#include "actors/http/http_request.hpp"
#include "actors/http/response_writer.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::actors::http {

/// Maps (method, path) to handlers. Fill it before handing it to `http_server`; the server only
/// reads it afterwards, from several threads.
class router {
public:
  /// A request handler. It runs on an I/O thread, so it must not block: answer through `writer`
  /// now, or keep `writer` and answer later from any thread.
  using handler = std::function<void(http_request, std::shared_ptr<response_writer>)>;

  /// Outcome of `find`.
  enum class outcome { found, not_found, method_not_allowed };

  /// Result of `find`: on `found`, `fn` and `route` (the pattern) are set; on
  /// `method_not_allowed`, `allow` lists the methods the path accepts ("GET, POST").
  struct match {
    outcome result = outcome::not_found;
    const handler* fn = nullptr;
    std::string route;
    std::string allow;
  };

  /// Registers `fn` for `method` (e.g. "GET", case-sensitive as HTTP says) on `pattern`: an exact
  /// path ("/v1/models"), or a prefix ending in "/*" ("/v1/models/*" matches "/v1/models/x" and
  /// deeper, not "/v1/models"). A later registration of the same pair replaces the earlier one.
  void add(std::string method, std::string pattern, handler fn);

  /// Looks up `path` (no query) for `method`; exact patterns win over prefixes, longer prefixes
  /// over shorter ones.
  match find(std::string_view method, std::string_view path) const;

  /// Renders the body of an error the server itself answers (404, 405, 408, 413, 415, 431, 500,
  /// 503, ...): `(status, message, code)` -> JSON text.
  using error_format = std::function<std::string(unsigned status, std::string_view message, std::string_view code)>;

  /// Errors on paths matching `pattern` (as in `add`, except that a prefix pattern also covers
  /// the path it is under: `/v1/messages/*` covers `/v1/messages`, `/v1/messages/` and below)
  /// use `fn`; e.g. Anthropic's shape on `/v1/messages/*`. The longest matching pattern wins;
  /// OpenAI's shape is the default.
  void set_error_format(std::string pattern, error_format fn);

  /// The error body for `path` in its format.
  std::string error_body(std::string_view path, unsigned status, std::string_view message, std::string_view code) const;

private:
  struct entry {
    std::string method;
    std::string pattern;
    handler fn;
  };
  static bool matches(std::string_view pattern, std::string_view path);
  std::vector<entry> entries_;
  std::vector<std::pair<std::string, error_format>> formats_;
};

} // namespace deepinfer::actors::http
