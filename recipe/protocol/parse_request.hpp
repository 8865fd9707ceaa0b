#pragma once

#include "recipe/base/expected.hpp"
#include "recipe/json_parse.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/conversation.hpp"

#include <nlohmann/json.hpp>

#include <string_view>

namespace deepinfer::recipe {

/// Parses a request body of the given API (dispatches to `parse_chat_request`,
/// `parse_responses_request` or `parse_messages_request`), under `limits`.
expected<conversation, api_error> parse_request(api_kind api, std::string_view body, const json_limits& limits = {});

/// The same for an already parsed body (key order must be preserved, hence `ordered_json`).
expected<conversation, api_error> parse_request_json(api_kind api, const nlohmann::ordered_json& body,
                                                     const json_limits& limits = {});

/// `"chat"` / `"responses"` / `"messages"`; nullopt for anything else.
std::optional<api_kind> parse_api_kind(std::string_view s);

} // namespace deepinfer::recipe
