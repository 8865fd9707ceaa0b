#include "recipe/stream/chat_encoder.hpp"

#include "recipe/json_text.hpp"

#include <nlohmann/json.hpp>

namespace deepinfer::recipe {

namespace {

using ojson = nlohmann::ordered_json;

ojson usage_json(const usage_counts& u) {
  ojson j;
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  j["completion_tokens_details"] = {{"reasoning_tokens", u.reasoning_tokens},
                                    {"accepted_prediction_tokens", u.accepted_prediction_tokens},
                                    {"rejected_prediction_tokens", u.rejected_prediction_tokens}};
  return j;
}

/// The fields every Chat Completions object starts with.
ojson head(const chat_encoder::config& cfg, const char* object) {
  return {{"id", cfg.id}, {"object", object}, {"created", cfg.created}, {"model", cfg.model}};
}

} // namespace

const char* openai_finish_reason(finish_reason r) {
  switch (r) {
    case finish_reason::length: return "length";
    case finish_reason::tool_calls: return "tool_calls";
    case finish_reason::stop: break;
  }
  return "stop";
}

nlohmann::ordered_json openai_stop_reason(const std::string& stop_sequence, std::int32_t stop_token) {
  if (!stop_sequence.empty())
    return stop_sequence;
  return stop_token >= 0 ? ojson(stop_token) : ojson();
}

std::string chat_encoder::chunk(std::string delta_json, const char* finish, const std::string& stop_reason_json) {
  // Written by hand: one chunk per event is the hot path of a streaming response.
  std::string s = "data: {\"id\":";
  append_json_string(s, cfg_.id);
  s += ",\"object\":\"chat.completion.chunk\",\"created\":" + std::to_string(cfg_.created) + ",\"model\":";
  append_json_string(s, cfg_.model);
  s += ",\"choices\":[{\"index\":" + std::to_string(cfg_.index) + ",\"delta\":" + delta_json + ",\"logprobs\":";
  if (pending_.empty()) {
    s += "null";
  } else {
    s += ojson{{"content", logprobs_json(pending_)}, {"refusal", nullptr}}.dump(-1, ' ', false,
                                                                              ojson::error_handler_t::replace);
    pending_.clear();
  }
  append_chunk_end(s, finish, stop_reason_json, cfg_.continuous_usage, cfg_.include_usage,
                   [&] { return usage_json(live_).dump(-1, ' ', false, ojson::error_handler_t::replace); });
  return s;
}

// `refusal: null` as OpenAI's first chunk has it; the model never refuses by a separate channel.
chat_encoder::chat_encoder(config cfg) : cfg_(std::move(cfg)) {
  if (!cfg_.echo.empty()) {
    stream_event e;
    e.text = cfg_.echo;
    result_.apply(std::span<const stream_event>{&e, 1});
  }
}

std::string chat_encoder::start() {
  auto out = chunk("{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}", nullptr);
  if (!cfg_.echo.empty()) {
    std::string d = "{\"content\":";
    append_json_string(d, cfg_.echo);
    out += chunk(d + "}", nullptr);
  }
  return out;
}

std::string chat_encoder::encode(std::span<const stream_event> events, const usage_counts& usage) {
  result_.apply(events);
  std::string out;
  for (const auto& e : events) {
    std::string d;
    switch (e.type) {
      case stream_event::kind::reasoning:
      case stream_event::kind::content:
        d = e.type == stream_event::kind::reasoning ? "{\"reasoning_content\":" : "{\"content\":";
        append_json_string(d, e.text);
        d += '}';
        break;
      case stream_event::kind::tool_call_start:
        d = "{\"tool_calls\":[{\"index\":" + std::to_string(e.tool_index) + ",\"id\":";
        append_json_string(d, e.tool_id);
        d += ",\"type\":\"function\",\"function\":{\"name\":";
        append_json_string(d, e.tool_name);
        d += ",\"arguments\":\"\"}}]}";
        break;
      case stream_event::kind::tool_call_arguments:
        d = "{\"tool_calls\":[{\"index\":" + std::to_string(e.tool_index) + ",\"function\":{\"arguments\":";
        append_json_string(d, e.text);
        d += "}}]}";
        break;
      case stream_event::kind::tool_call_end: continue;
      case stream_event::kind::finish: {
        out += chunk("{}", openai_finish_reason(e.reason), openai_stop_reason(e.text, e.stop_token).dump());
        if (cfg_.ends_stream)
          out += end(usage);
        continue;
      }
    }
    out += chunk(std::move(d), nullptr);
  }
  return out;
}

std::string chat_encoder::end(const usage_counts& usage) const {
  std::string out;
  if (cfg_.include_usage) {
    ojson u = head(cfg_, "chat.completion.chunk");
    u["choices"] = ojson::array();
    u["usage"] = usage_json(usage);
    out += "data: " + u.dump() + "\n\n";
  }
  return out + "data: [DONE]\n\n";
}

void chat_encoder::logprobs(std::span<const token_logprob> entries, bool stream) {
  logprobs_.insert(logprobs_.end(), entries.begin(), entries.end());
  if (stream)
    pending_.insert(pending_.end(), entries.begin(), entries.end());
}

std::string chat_encoder::fail(std::string_view type, std::string_view code, std::string_view message) {
  ojson e;
  e["error"] = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}};
  return "data: " + e.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n\ndata: [DONE]\n\n";
}

std::string chat_encoder::body(const usage_counts& usage) const {
  ojson msg;
  msg["role"] = "assistant";
  msg["content"] = result_.content.empty() && !result_.calls.empty() ? ojson() : ojson(result_.content);
  // Not optional in ChatCompletionMessage: strict clients (generated zod/pydantic models) need the key.
  msg["refusal"] = nullptr;
  if (!result_.reasoning.empty())
    msg["reasoning_content"] = result_.reasoning;
  if (!result_.calls.empty()) {
    msg["tool_calls"] = ojson::array();
    for (const auto& c : result_.calls)
      msg["tool_calls"].push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  ojson j = head(cfg_, "chat.completion");
  j["choices"] = ojson::array({ojson{{"index", cfg_.index},
                                     {"message", msg},
                                     {"logprobs", logprobs_.empty() ? ojson()
                                                                    : ojson{{"content", logprobs_json(logprobs_)},
                                                                            {"refusal", nullptr}}},
                                     {"finish_reason", openai_finish_reason(result_.reason)},
                                     {"stop_reason", openai_stop_reason(result_.stop_sequence, result_.stop_token)}}});
  j["usage"] = usage_json(usage);
  if (!prompt_logprobs_.is_null())
    j["prompt_logprobs"] = prompt_logprobs_;
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

} // namespace deepinfer::recipe
