#pragma once

#include "recipe/base/expected.hpp"
#include "recipe/json_parse.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/conversation.hpp"

#include <string_view>

namespace deepinfer::recipe {

/// Parses and validates an OpenAI Responses request body (`POST /v1/responses`) into a
/// conversation: `instructions` become the first system message; `message`, `function_call`,
/// `function_call_output` and `reasoning` items become turns (a reasoning item and the message and
/// calls after it form one assistant turn). Stateful features (`previous_response_id`,
/// `conversation`) and built-in tools are refused with a 400 naming the field.
/// The body is parsed under `limits` (a deeper body is a 400 before any of it is built); for an
/// already parsed body, `parse_request_json` (parse_request.hpp).
expected<conversation, api_error> parse_responses_request(std::string_view body, const json_limits& limits = {});

} // namespace deepinfer::recipe
