#pragma once

#include <string>
#include <string_view>

namespace deepinfer::actors::http {

/// The JSON body of an error in Anthropic's shape: `{"type":"error","error":{"type":...,"message":...}}`.
std::string anthropic_error(std::string_view message, std::string_view type);

/// Anthropic's error type for an HTTP status (400 invalid_request_error, 401 authentication_error,
/// 403 permission_error, 404 not_found_error, 408 / 504 timeout_error, 413 / 431
/// request_too_large, 429 rate_limit_error, 503 / 529 overloaded_error, other 5xx api_error).
std::string_view anthropic_error_type(unsigned status);

} // namespace deepinfer::actors::http
