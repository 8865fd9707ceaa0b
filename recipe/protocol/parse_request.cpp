#include "recipe/protocol/parse_request.hpp"

#include "recipe/protocol/chat_request.hpp"
#include "recipe/protocol/json_reader.hpp"
#include "recipe/protocol/messages_request.hpp"
#include "recipe/protocol/request_parsers.hpp"
#include "recipe/protocol/responses_request.hpp"

namespace deepinfer::recipe {

namespace {

using result = expected<conversation, api_error>;

auto parser_of(api_kind api) {
  switch (api) {
    case api_kind::responses: return &parse_responses_body;
    case api_kind::messages: return &parse_messages_body;
    case api_kind::completions: return &parse_completions_body;
    case api_kind::chat: break;
  }
  return &parse_chat_body;
}

} // namespace

// The one place a request body becomes a conversation or the API's error value.
result parse_request(api_kind api, std::string_view body, const json_limits& limits) {
  return guarded_parse<result>(api, limits, nullptr, body, parser_of(api));
}

result parse_request_json(api_kind api, const nlohmann::ordered_json& body, const json_limits& limits) {
  return guarded_parse<result>(api, limits, &body, {}, parser_of(api));
}

result parse_chat_request(std::string_view body, const json_limits& limits) {
  return parse_request(api_kind::chat, body, limits);
}

result parse_responses_request(std::string_view body, const json_limits& limits) {
  return parse_request(api_kind::responses, body, limits);
}

result parse_messages_request(std::string_view body, const json_limits& limits) {
  return parse_request(api_kind::messages, body, limits);
}

std::optional<api_kind> parse_api_kind(std::string_view s) {
  if (s == "chat")
    return api_kind::chat;
  if (s == "responses")
    return api_kind::responses;
  if (s == "messages")
    return api_kind::messages;
  if (s == "completions")
    return api_kind::completions;
  return std::nullopt;
}

} // namespace deepinfer::recipe
