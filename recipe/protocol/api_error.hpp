#pragma once

#include "recipe/protocol/conversation.hpp"

#include <string>
#include <string_view>

namespace deepinfer::recipe {

/// A request the server refuses, in the terms of the API it arrived on.
struct api_error {
  recipe::api_kind api = recipe::api_kind::chat;
  /// HTTP status (400 invalid request, 404 unknown model, 429 / 529 overloaded, 500 server
  /// error, 504 deadline, …).
  int status = 400;
  /// The API's error type (`invalid_request_error`, `not_found_error`, `api_error`).
  std::string type = "invalid_request_error";
  /// Human-readable text; for Anthropic it starts with the field path, as Anthropic's own do.
  std::string message;
  /// Offending field path in the API's notation (`messages[2].content` for OpenAI,
  /// `messages.2.content` for Anthropic); empty when the body as a whole is at fault.
  std::string param;
  /// OpenAI's `code` (`rate_limit_exceeded`, `deadline_exceeded`, ...); empty: `invalid_value`
  /// for a 400, null otherwise. Anthropic's body has no code.
  std::string code;

  /// The JSON body the API itself sends for this error (OpenAI: `{"error": {message, type, param,
  /// code}}`; Anthropic: `{"type": "error", "error": {type, message}}`).
  std::string body() const;
};

/// A client's value as an error message quotes it: cut to at most `max_bytes` at a character
/// boundary, with "..." after a cut, so a megabyte-long field is not echoed back whole.
std::string shown_value(std::string_view text, std::size_t max_bytes = 80);

} // namespace deepinfer::recipe
