#pragma once

#include "recipe/base/expected.hpp"
#include "recipe/json_parse.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/conversation.hpp"

#include <string_view>

namespace deepinfer::recipe {

/// Parses and validates an OpenAI Chat Completions request body (`POST /v1/chat/completions`) into
/// a conversation. Unknown fields are ignored. On failure: a 400 with OpenAI's error body whose
/// `param` names the field (`messages[1].tool_calls[0].function.name`).
/// The body is parsed under `limits` (a deeper body is a 400 before any of it is built); for an
/// already parsed body, `parse_request_json` (parse_request.hpp).
expected<conversation, api_error> parse_chat_request(std::string_view body, const json_limits& limits = {});

} // namespace deepinfer::recipe
