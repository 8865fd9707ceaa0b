#include "recipe/protocol/parse_request.hpp"

#include "recipe/protocol/chat_request.hpp"
#include "recipe/protocol/messages_request.hpp"
#include "recipe/protocol/responses_request.hpp"

namespace deepinfer::recipe {

expected<conversation, api_error> parse_request(api_kind api, std::string_view body, const json_limits& limits) {
  switch (api) {
    case api_kind::responses: return parse_responses_request(body, limits);
    case api_kind::messages: return parse_messages_request(body, limits);
    case api_kind::chat: break;
  }
  return parse_chat_request(body, limits);
}

std::optional<api_kind> parse_api_kind(std::string_view s) {
  if (s == "chat")
    return api_kind::chat;
  if (s == "responses")
    return api_kind::responses;
  if (s == "messages")
    return api_kind::messages;
  return std::nullopt;
}

} // namespace deepinfer::recipe
