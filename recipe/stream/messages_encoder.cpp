#include "recipe/stream/messages_encoder.hpp"

#include "recipe/json_parse.hpp"

#include <nlohmann/json.hpp>

namespace deepinfer::recipe {

namespace {

using ojson = nlohmann::ordered_json;

std::string sse(const char* type, ojson j) {
  j["type"] = type;
  return std::string("event: ") + type + "\ndata: " + j.dump(-1, ' ', false, ojson::error_handler_t::replace) +
         "\n\n";
}

ojson usage_json(const usage_counts& u, bool with_output) {
  // Anthropic's input_tokens excludes tokens read from the cache.
  ojson j;
  j["input_tokens"] = u.prompt_tokens - u.cached_tokens;
  j["cache_creation_input_tokens"] = 0;
  j["cache_read_input_tokens"] = u.cached_tokens;
  j["output_tokens"] = with_output ? u.completion_tokens : 0;
  return j;
}

ojson tool_input(const std::string& arguments) {
  // The model's own text, bounded by max_tokens; too deep or not an object reads as no input.
  auto j = parse_json(arguments);
  return j && j->is_object() ? std::move(*j) : ojson::object();
}

} // namespace

const char* anthropic_stop_reason(finish_reason r) {
  switch (r) {
    case finish_reason::length: return "max_tokens";
    case finish_reason::tool_calls: return "tool_use";
    case finish_reason::stop: break;
  }
  return "end_turn";
}

ojson messages_encoder::message_json(ojson content, const char* stop_reason, ojson usage) const {
  ojson m;
  m["id"] = cfg_.id;
  m["type"] = "message";
  m["role"] = "assistant";
  m["model"] = cfg_.model;
  m["content"] = std::move(content);
  m["stop_reason"] = stop_reason ? ojson(stop_reason) : ojson();
  m["stop_sequence"] = nullptr;
  m["usage"] = std::move(usage);
  return m;
}

std::string messages_encoder::start(const usage_counts& usage) {
  return sse("message_start", {{"message", message_json(ojson::array(), nullptr, usage_json(usage, false))}});
}

std::string messages_encoder::close_block() {
  if (open_ == block::none)
    return {};
  std::string out;
  if (open_ == block::thinking)
    out += sse("content_block_delta",
               {{"index", index_}, {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
  out += sse("content_block_stop", {{"index", index_}});
  open_ = block::none;
  return out;
}

std::string messages_encoder::encode(std::span<const stream_event> events, const usage_counts& usage) {
  std::string out;
  for (const auto& e : events) {
    result_.apply(std::span(&e, 1));
    switch (e.type) {
      case stream_event::kind::reasoning:
      case stream_event::kind::content: {
        const bool thinking = e.type == stream_event::kind::reasoning;
        const block want = thinking ? block::thinking : block::text;
        if (open_ != want) {
          out += close_block();
          open_ = want;
          index_ = blocks_++;
          ojson cb = thinking ? ojson{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                              : ojson{{"type", "text"}, {"text", ""}};
          out += sse("content_block_start", {{"index", index_}, {"content_block", cb}});
        }
        ojson d = thinking ? ojson{{"type", "thinking_delta"}, {"thinking", e.text}}
                           : ojson{{"type", "text_delta"}, {"text", e.text}};
        out += sse("content_block_delta", {{"index", index_}, {"delta", d}});
        break;
      }
      case stream_event::kind::tool_call_start:
        out += close_block();
        open_ = block::tool_use;
        index_ = blocks_++;
        out += sse("content_block_start",
                   {{"index", index_},
                    {"content_block",
                     {{"type", "tool_use"}, {"id", e.tool_id}, {"name", e.tool_name}, {"input", ojson::object()}}}});
        break;
      case stream_event::kind::tool_call_arguments:
        out += sse("content_block_delta",
                   {{"index", index_}, {"delta", {{"type", "input_json_delta"}, {"partial_json", e.text}}}});
        break;
      case stream_event::kind::tool_call_end: out += close_block(); break;
      case stream_event::kind::finish:
        out += close_block();
        out += sse("message_delta",
                   {{"delta", {{"stop_reason", e.text.empty() ? anthropic_stop_reason(e.reason) : "stop_sequence"},
                               {"stop_sequence", e.text.empty() ? ojson() : ojson(e.text)}}},
                    {"usage", usage_json(usage, true)}});
        out += sse("message_stop", ojson::object());
        break;
    }
  }
  return out;
}

std::string messages_encoder::fail(std::string_view type, std::string_view, std::string_view message) {
  return sse("error", {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}});
}

std::string messages_encoder::body(const usage_counts& usage) const {
  ojson content = ojson::array();
  if (!result_.reasoning.empty())
    content.push_back({{"type", "thinking"}, {"thinking", result_.reasoning}, {"signature", ""}});
  if (!result_.content.empty())
    content.push_back({{"type", "text"}, {"text", result_.content}});
  for (const auto& c : result_.calls)
    content.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", tool_input(c.arguments)}});
  const bool by_sequence = !result_.stop_sequence.empty();
  auto m = message_json(std::move(content), by_sequence ? "stop_sequence" : anthropic_stop_reason(result_.reason),
                        usage_json(usage, true));
  if (by_sequence)
    m["stop_sequence"] = result_.stop_sequence;
  return m.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

} // namespace deepinfer::recipe
