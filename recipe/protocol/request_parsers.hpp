#pragma once

#include "recipe/protocol/conversation.hpp"
#include "recipe/protocol/json_reader.hpp"

namespace deepinfer::recipe {

/// Each API's body parser: validates `body` (a JSON object, under the limits `root` carries) and
/// builds its conversation; throws `invalid_request` naming the field. Internal to
/// recipe/protocol: callers use `parse_request` / `parse_<api>_request`, which run these under
/// `guarded_parse` (parse_request.cpp).
conversation parse_chat_body(const json& body, const json_path& root);
conversation parse_responses_body(const json& body, const json_path& root);
conversation parse_messages_body(const json& body, const json_path& root);
conversation parse_completions_body(const json& body, const json_path& root);

} // namespace deepinfer::recipe
