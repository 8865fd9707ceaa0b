#include "recipe/stream/responses_encoder.hpp"

namespace deepinfer::recipe {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

} // namespace

ojson responses_echo(const conversation& conv) {
  ojson e = ojson::object();
  e["instructions"] = conv.instructions ? ojson(*conv.instructions) : ojson();
  e["metadata"] = conv.metadata.is_object() ? conv.metadata : ojson::object();
  e["parallel_tool_calls"] = conv.parallel_tool_calls;
  e["temperature"] = conv.sampling.temperature ? ojson(*conv.sampling.temperature) : ojson();
  e["top_p"] = conv.sampling.top_p ? ojson(*conv.sampling.top_p) : ojson();
  e["previous_response_id"] = conv.previous_response_id.empty() ? ojson() : ojson(conv.previous_response_id);
  e["store"] = conv.store;
  e["background"] = conv.background;
  e["truncation"] = conv.truncate_auto ? "auto" : "disabled";
  e["top_logprobs"] = conv.sampling.logprobs ? ojson(conv.sampling.top_logprobs) : ojson();
  e["max_output_tokens"] = conv.sampling.max_tokens ? ojson(*conv.sampling.max_tokens) : ojson();
  // The request's own settings, as the Response object carries them.
  if (conv.user)
    e["user"] = *conv.user;
  e["reasoning"] = conv.reasoning_effort.empty() ? ojson()
                                                 : ojson{{"effort", conv.reasoning_effort}, {"summary", nullptr}};
  e["text"] = {{"format", conv.format && conv.format->original.is_object() ? conv.format->original
                                                                          : ojson{{"type", "text"}}}};
  switch (conv.tool_choice.kind) {
    case tool_choice::mode::automatic: e["tool_choice"] = "auto"; break;
    case tool_choice::mode::none: e["tool_choice"] = "none"; break;
    case tool_choice::mode::required: e["tool_choice"] = "required"; break;
    case tool_choice::mode::named: e["tool_choice"] = {{"type", "function"}, {"name", conv.tool_choice.name}}; break;
  }
  e["tools"] = ojson::array();
  for (const auto& t : conv.tools) {
    ojson x = {{"type", "function"}};
    for (const auto& [k, v] : t.function.items())
      x[k] = v;
    if (!x.contains("strict"))
      x["strict"] = false;
    if (!x.contains("parameters"))
      x["parameters"] = ojson::object();
    e["tools"].push_back(std::move(x));
  }
  return e;
}

// A token's bytes need not be whole UTF-8 (a logprob entry's `token`): replaced, never a throw.
std::string responses_encoder::body(const usage_counts& usage) const { return dump(response(usage, true)); }

std::string responses_encoder::event(ojson j) {
  j["sequence_number"] = seq_++;
  const std::string type = j["type"].get<std::string>();
  return "event: " + type + "\ndata: " + dump(j) + "\n\n";
}

void responses_encoder::apply(std::span<const stream_event> events) {
  for (const auto& e : events)
    logprobs_.take(e);
  result_.apply(events);
}

std::string responses_encoder::item_id(item kind, std::size_t call) const {
  const char* prefix = kind == item::reasoning ? "rs_" : kind == item::message ? "msg_" : "fc_";
  return prefix + cfg_.id + "_" + std::to_string(kind == item::call ? call : output_index_);
}

ojson responses_encoder::item_json(item kind, std::size_t call, bool done) const {
  const char* status = !done ? "in_progress" : truncated_ ? "incomplete" : "completed";
  if (kind == item::reasoning) {
    ojson content = ojson::array();
    if (done)
      content.push_back({{"type", "reasoning_text"}, {"text", text_}});
    return {{"id", item_id(kind, call)}, {"type", "reasoning"}, {"summary", ojson::array()},
            {"content", content}, {"status", status}};
  }
  if (kind == item::message) {
    ojson content = ojson::array();
    if (done)
      content.push_back({{"type", "output_text"}, {"text", text_}, {"annotations", ojson::array()},
                         {"logprobs", logprobs_json(item_logprobs_)}});
    return {{"id", item_id(kind, call)}, {"type", "message"}, {"status", status}, {"role", "assistant"},
            {"content", content}};
  }
  const auto& c = result_.calls.at(call);
  return {{"id", item_id(kind, call)}, {"type", "function_call"}, {"status", status},
          {"arguments", done ? c.arguments : std::string()}, {"call_id", c.id}, {"name", c.name}};
}

std::string responses_encoder::start() {
  std::string out = event({{"type", "response.created"}, {"response", response({}, false)}});
  out += event({{"type", "response.in_progress"}, {"response", response({}, false)}});
  return out;
}

std::string responses_encoder::close_item() {
  std::string out;
  const auto id = item_id(open_, call_);
  const auto idx = output_index_;
  if (open_ == item::reasoning || open_ == item::message) {
    const bool r = open_ == item::reasoning;
    ojson done = {{"type", r ? "response.reasoning_text.done" : "response.output_text.done"}, {"item_id", id},
                  {"output_index", idx}, {"content_index", 0}, {"text", text_}};
    if (!r)
      done["logprobs"] = logprobs_json(item_logprobs_);
    out += event(done);
    ojson part = r ? ojson{{"type", "reasoning_text"}, {"text", text_}}
                   : ojson{{"type", "output_text"}, {"text", text_}, {"annotations", ojson::array()},
                           {"logprobs", logprobs_json(item_logprobs_)}};
    out += event({{"type", "response.content_part.done"}, {"item_id", id}, {"output_index", idx},
                  {"content_index", 0}, {"part", part}});
  } else if (open_ == item::call) {
    const auto& c = result_.calls.at(call_);
    out += event({{"type", "response.function_call_arguments.done"}, {"item_id", id}, {"output_index", idx},
                  {"name", c.name}, {"arguments", c.arguments}});
  }
  if (open_ != item::none) {
    auto it = item_json(open_, call_, true);
    done_items_.push_back(it);
    out += event({{"type", "response.output_item.done"}, {"output_index", idx}, {"item", it}});
  }
  open_ = item::none;
  text_.clear();
  item_logprobs_.clear();
  return out;
}

std::string responses_encoder::encode(std::span<const stream_event> events, const usage_counts& usage) {
  streamed_ = true;
  std::string out;
  for (const auto& e : events) {
    result_.apply(std::span(&e, 1));
    auto lp = logprobs_.take(e);
    const item want = e.type == stream_event::kind::reasoning ? item::reasoning
                      : e.type == stream_event::kind::content ? item::message
                                                              : item::call;
    if (e.type == stream_event::kind::reasoning || e.type == stream_event::kind::content) {
      if (open_ != want) {
        out += close_item();
        open_ = want;
        output_index_ = items_++;
        const auto id = item_id(want, 0);
        out += event({{"type", "response.output_item.added"}, {"output_index", output_index_},
                      {"item", item_json(want, 0, false)}});
        ojson part = want == item::reasoning ? ojson{{"type", "reasoning_text"}, {"text", ""}}
                                             : ojson{{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}};
        out += event({{"type", "response.content_part.added"}, {"item_id", id}, {"output_index", output_index_},
                      {"content_index", 0}, {"part", part}});
      }
      text_ += e.text;
      ojson d = {{"type", want == item::reasoning ? "response.reasoning_text.delta" : "response.output_text.delta"},
                 {"item_id", item_id(want, 0)}, {"output_index", output_index_}, {"content_index", 0},
                 {"delta", e.text}};
      if (want == item::message) {
        d["logprobs"] = logprobs_json(lp);
        item_logprobs_.insert(item_logprobs_.end(), lp.begin(), lp.end());
      }
      out += event(d);
    } else if (e.type == stream_event::kind::tool_call_start) {
      out += close_item();
      open_ = item::call;
      call_ = e.tool_index;
      output_index_ = items_++;
      out += event({{"type", "response.output_item.added"}, {"output_index", output_index_},
                    {"item", item_json(item::call, call_, false)}});
    } else if (e.type == stream_event::kind::tool_call_arguments) {
      out += event({{"type", "response.function_call_arguments.delta"}, {"item_id", item_id(item::call, e.tool_index)},
                    {"output_index", output_index_}, {"delta", e.text}});
    } else if (e.type == stream_event::kind::tool_call_end) {
      out += close_item();
    } else {
      const bool incomplete = e.reason == finish_reason::length;
      truncated_ = incomplete; // only the item the limit cut is incomplete
      out += close_item();
      out += event({{"type", incomplete ? "response.incomplete" : "response.completed"},
                    {"response", response(usage, true)}});
    }
  }
  return out;
}

std::string responses_encoder::fail(std::string_view type, std::string_view code, std::string_view message,
                                    const usage_counts& usage) {
  truncated_ = true;
  std::string out = close_item();
  failure_ = {{"code", code}, {"message", message}};
  out += event({{"type", "error"}, {"code", code}, {"message", message}, {"param", nullptr}, {"error_type", type}});
  out += event({{"type", "response.failed"}, {"response", response(usage, true)}});
  return out;
}

std::string responses_encoder::queued() const {
  auto r = response({}, false);
  r["status"] = "queued";
  return dump(r);
}

std::string responses_encoder::cancel() {
  truncated_ = true;
  cancelled_ = true;
  return close_item(); // nothing open unless streamed
}

ojson responses_encoder::response(const usage_counts& usage, bool final) const {
  ojson r;
  r["id"] = cfg_.id;
  r["object"] = "response";
  r["created_at"] = cfg_.created;
  const bool incomplete = final && result_.finished && result_.reason == finish_reason::length;
  r["status"] = cancelled_ ? "cancelled"
                : !failure_.is_null() ? "failed"
                : !final ? "in_progress"
                : incomplete ? "incomplete"
                             : "completed";
  r["error"] = failure_;
  r["incomplete_details"] = incomplete ? ojson{{"reason", "max_output_tokens"}} : ojson();
  r["model"] = cfg_.model;
  r["output"] = ojson::array();
  if (final) {
    if (streamed_) {
      r["output"] = done_items_;
    } else {
      // Non-streaming: build the items from the completion (as it stands, when cut short).
      if (!result_.reasoning.empty())
        r["output"].push_back({{"id", "rs_" + cfg_.id + "_0"}, {"type", "reasoning"}, {"summary", ojson::array()},
                               {"content", ojson::array({ojson{{"type", "reasoning_text"}, {"text", result_.reasoning}}})},
                               {"status", "completed"}});
      if (!result_.content.empty())
        r["output"].push_back({{"id", "msg_" + cfg_.id + "_" + std::to_string(r["output"].size())}, {"type", "message"},
                               {"status", "completed"}, {"role", "assistant"},
                               {"content", ojson::array({ojson{{"type", "output_text"}, {"text", result_.content},
                                                               {"annotations", ojson::array()},
                                                               {"logprobs", logprobs_json(logprobs_.all())}}})}});
      for (std::size_t i = 0; i < result_.calls.size(); ++i) {
        const auto& c = result_.calls[i];
        r["output"].push_back({{"id", "fc_" + cfg_.id + "_" + std::to_string(i)}, {"type", "function_call"},
                               {"status", "completed"}, {"arguments", c.arguments}, {"call_id", c.id}, {"name", c.name}});
      }
      // The token limit (or a failure, a cancel) cut the last item short.
      if ((incomplete || (truncated_ && !result_.finished)) && !r["output"].empty())
        r["output"].back()["status"] = "incomplete";
    }
  }
  for (const auto& [k, v] : cfg_.echo.items())
    r[k] = v;
  if (final) {
    ojson u;
    u["input_tokens"] = usage.prompt_tokens;
    u["input_tokens_details"] = {{"cached_tokens", usage.cached_tokens}};
    u["output_tokens"] = usage.completion_tokens;
    u["output_tokens_details"] = {{"reasoning_tokens", usage.reasoning_tokens}};
    u["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
    r["usage"] = u;
  } else {
    r["usage"] = nullptr;
  }
  return r;
}

} // namespace deepinfer::recipe
