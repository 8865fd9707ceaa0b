#pragma once

#include "recipe/base/expected.hpp"
#include "recipe/json_parse.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/conversation.hpp"

#include <string_view>

namespace deepinfer::recipe {

/// Parses and validates an Anthropic Messages request body (`POST /v1/messages`) into a
/// conversation: `system` becomes the first system message; `tool_result` blocks of a user message
/// become tool messages (in order) followed by the rest of that message; `thinking` blocks are the
/// turn's reasoning and `tool_use` blocks its calls. Errors use Anthropic's body with the field
/// path in the message (`messages.0.content.1.type: ...`).
/// The body is parsed under `limits` (a deeper body is a 400 before any of it is built); for an
/// already parsed body, `parse_request_json` (parse_request.hpp).
expected<conversation, api_error> parse_messages_request(std::string_view body, const json_limits& limits = {});

} // namespace deepinfer::recipe
