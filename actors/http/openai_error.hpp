#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace deepinfer::actors::http {

/// The JSON body of an error in OpenAI's shape:
/// `{"error":{"message":...,"type":...,"param":...,"code":...}}`; an empty optional renders as null.
/// `type` is e.g. "invalid_request_error" (4xx) or "server_error" (5xx).
std::string openai_error(std::string_view message, std::string_view type,
                         std::optional<std::string_view> code = std::nullopt,
                         std::optional<std::string_view> param = std::nullopt);

/// OpenAI's error type for an HTTP status: "rate_limit_error" for 429, "server_error" for 5xx,
/// else "invalid_request_error".
std::string_view openai_error_type(unsigned status);

} // namespace deepinfer::actors::http
