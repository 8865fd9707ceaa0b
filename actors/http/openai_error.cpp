#include "actors/http/openai_error.hpp"

#include <nlohmann/json.hpp>

namespace deepinfer::actors::http {

std::string openai_error(std::string_view message, std::string_view type,
                         std::optional<std::string_view> code,
                         std::optional<std::string_view> param) {
  auto or_null = [](std::optional<std::string_view> x) {
    return x ? nlohmann::json(std::string{*x}) : nlohmann::json(nullptr);
  };
  nlohmann::json err = {{"message", std::string{message}},
                        {"type", std::string{type}},
                        {"param", or_null(param)},
                        {"code", or_null(code)}};
  // Replace invalid UTF-8 (e.g. echoed request targets) instead of throwing.
  return nlohmann::json{{"error", std::move(err)}}.dump(-1, ' ', false,
                                                          nlohmann::json::error_handler_t::replace);
}

std::string_view openai_error_type(unsigned status) {
  if (status == 429)
    return "rate_limit_error";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

} // namespace deepinfer::actors::http
