#include "actors/http/anthropic_error.hpp"

#include <nlohmann/json.hpp>

namespace deepinfer::actors::http {

std::string anthropic_error(std::string_view message, std::string_view type) {
  nlohmann::ordered_json j;
  j["type"] = "error";
  j["error"] = {{"type", std::string{type}}, {"message", std::string{message}}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string_view anthropic_error_type(unsigned status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 408:
    case 504: return "timeout_error";
    case 413:
    case 431: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

} // namespace deepinfer::actors::http
