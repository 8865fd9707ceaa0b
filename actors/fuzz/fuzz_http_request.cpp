// libFuzzer target: arbitrary bytes as one HTTP/1.1 request through the server's request path,
// without a socket or CAF: Beast's parser under the server's limits (what `connection` reads),
// the router of the three API routes with their error formats, the Host / media-type / API-key
// checks, then the route's request parser (JSON depth limit) and both renderers
// (recipe/fuzz/fuzz_support.hpp). Invariants: every answer the server would give is JSON in the
// shape of its route (Anthropic's on /v1/messages, OpenAI's elsewhere); a refused body is a 400.

#include "actors/http/anthropic_error.hpp"
#include "actors/http/request_checks.hpp"
#include "actors/http/router.hpp"
#include "recipe/fuzz/fuzz_support.hpp"

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace {

using namespace deepinfer;
using namespace deepinfer::actors::http;
namespace bhttp = boost::beast::http;

const router& routes() {
  static const router r = [] {
    router x;
    for (auto path : {"/v1/chat/completions", "/v1/responses", "/v1/messages"})
      x.add("POST", path, [](http_request, std::shared_ptr<response_writer>) {});
    x.add("GET", "/health", [](http_request, std::shared_ptr<response_writer>) {});
    auto anthropic = [](unsigned status, std::string_view message, std::string_view) {
      return anthropic_error(message, anthropic_error_type(status));
    };
    x.set_error_format("/v1/messages/*", anthropic);
    return x;
  }();
  return r;
}

/// An error body the server would send for `path`: JSON, in the route's shape.
void check_error(std::string_view path, unsigned status, const std::string& message) {
  const auto body = routes().error_body(path, status, message, "code");
  const auto j = nlohmann::json::parse(body, nullptr, false);
  recipe::fuzz::require(!j.is_discarded(), "error body is JSON");
  const bool anthropic = path == "/v1/messages" || path.rfind("/v1/messages/", 0) == 0;
  recipe::fuzz::require(anthropic ? j.value("type", "") == "error" && j["error"].contains("type")
                                  : j.contains("error") && j["error"].contains("param"),
                        "error body in the route's shape");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(64 * 1024);
  parser.body_limit(8u << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && !parser.is_done())
    parser.put_eof(ec);
  const auto& msg = parser.get();
  const std::string target{msg.target()};
  const std::string path = target.substr(0, target.find('?'));
  if (ec || !parser.is_done()) {
    // 400 / 413 / 431 / 408 (a stall): answered in the shape of whatever path was read.
    check_error(path, 400, "malformed HTTP request: " + ec.message());
    return 0;
  }
  http_request req;
  req.method = std::string{msg.method_string()};
  req.target = target;
  req.path = path;
  for (const auto& f : msg)
    req.headers.emplace_back(std::string{f.name_string()}, std::string{f.value()});
  req.body = msg.body();
  // Host policy (loopback), media type, API key: never throw, always a sentence when refusing.
  const host_policy hosts{"127.0.0.1", {"deepinfer.internal"}};
  if (auto host = req.header("host"); !hosts.allows(host))
    check_error(path, 403, hosts.explain(*host));
  if (auto problem = json_body_problem(req))
    check_error(path, 415, *problem);
  (void)key_matches(api_key_of(req), {"key-alpha-0123456789"});
  const auto m = routes().find(req.method, req.path);
  if (m.result != router::outcome::found) {
    check_error(path, m.result == router::outcome::not_found ? 404 : 405, "no such route");
    return 0;
  }
  auto api = req.path == "/v1/messages" ? recipe::api_kind::messages
             : req.path == "/v1/responses" ? recipe::api_kind::responses
                                           : recipe::api_kind::chat;
  if (req.method != "POST")
    return 0;
  return recipe::fuzz::request_input(api, reinterpret_cast<const std::uint8_t*>(req.body.data()), req.body.size());
}
