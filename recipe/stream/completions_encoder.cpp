#include "recipe/stream/completions_encoder.hpp"

#include "recipe/json_text.hpp"
#include "recipe/stream/chat_encoder.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace deepinfer::recipe {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

/// Characters (code points) in `s`: the bytes that do not continue a UTF-8 sequence.
std::size_t chars(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xC0) != 0x80;
  return n;
}

ojson usage_json(const usage_counts& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

} // namespace

std::string completions_encoder::logprobs_object(std::span<const token_logprob> entries, std::size_t offset) {
  ojson tokens = ojson::array(), lps = ojson::array(), tops = ojson::array(), offsets = ojson::array();
  for (const auto& e : entries) {
    tokens.push_back(e.token);
    if (std::isnan(e.logprob)) { // an echoed prompt's first token: nothing scores it
      lps.push_back(nullptr);
      tops.push_back(nullptr);
      offsets.push_back(offset);
      offset += chars(e.token);
      continue;
    }
    lps.push_back(e.logprob);
    ojson top = ojson::object();
    for (const auto& a : e.top)
      if (!top.contains(a.token)) // two ids can spell the same bytes: the likelier one is kept
        top[a.token] = a.logprob;
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += chars(e.token);
  }
  return dump({{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}});
}

std::string completions_encoder::chunk(const std::string& text, const std::string& logprobs_json,
                                       const char* finish, const std::string& stop_reason_json) const {
  std::string s = "data: {\"id\":";
  append_json_string(s, cfg_.id);
  s += ",\"object\":\"text_completion\",\"created\":" + std::to_string(cfg_.created) + ",\"model\":";
  append_json_string(s, cfg_.model);
  s += ",\"choices\":[{\"text\":";
  append_json_string(s, text);
  s += ",\"index\":" + std::to_string(cfg_.index);
  s += ",\"logprobs\":" + (logprobs_json.empty() ? std::string("null") : logprobs_json);
  append_chunk_end(s, finish, stop_reason_json, cfg_.continuous_usage, cfg_.include_usage,
                   [&] { return dump(usage_json(live_)); });
  return s;
}

std::string completions_encoder::echo(std::string text, std::vector<token_logprob> entries, bool with_logprobs) {
  echo_text_ = std::move(text);
  echo_entries_ = std::move(entries);
  // The completion's offsets go on from the prompt tokens' (what vLLM counts: their spellings,
  // which for a text prompt include the BOS the client did not write).
  std::string logprobs;
  if (with_logprobs) {
    logprobs_.hold({}); // asked for: the body lists them even if no output token is text
    logprobs = logprobs_object(echo_entries_, 0);
    for (const auto& e : echo_entries_)
      chars_ += chars(e.token);
  }
  return echo_text_.empty() && !with_logprobs ? std::string() : chunk(echo_text_, logprobs, nullptr);
}

void completions_encoder::apply(std::span<const stream_event> events) {
  for (const auto& e : events)
    logprobs_.take(e);
  result_.apply(events);
}

std::string completions_encoder::encode(std::span<const stream_event> events, const usage_counts& usage) {
  std::string out;
  for (const auto& e : events) {
    result_.apply(std::span(&e, 1));
    auto lp = logprobs_.take(e);
    if (e.type == stream_event::kind::content && !e.text.empty()) {
      out += chunk(e.text, logprobs_.asked() ? logprobs_object(lp, chars_) : std::string(), nullptr);
      for (const auto& x : lp)
        chars_ += chars(x.token);
    } else if (e.type == stream_event::kind::finish) {
      out += chunk("", {}, openai_finish_reason(e.reason), openai_stop_reason(e.text, e.stop_token).dump());
      if (cfg_.ends_stream)
        out += end(usage);
    }
    // No reasoning or tool calls on this endpoint (the parser runs without either).
  }
  return out;
}

std::string completions_encoder::end(const usage_counts& usage) const {
  std::string out;
  if (cfg_.include_usage) {
    ojson u = {{"id", cfg_.id}, {"object", "text_completion"}, {"created", cfg_.created}, {"model", cfg_.model},
               {"choices", ojson::array()}, {"usage", usage_json(usage)}};
    out += "data: " + dump(u) + "\n\n";
  }
  return out + "data: [DONE]\n\n";
}

std::string completions_encoder::fail(std::string_view type, std::string_view code, std::string_view message) {
  ojson e;
  e["error"] = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}};
  return "data: " + dump(e) + "\n\ndata: [DONE]\n\n";
}

std::string completions_encoder::body(const usage_counts& usage) const {
  ojson j = {{"id", cfg_.id}, {"object", "text_completion"}, {"created", cfg_.created}, {"model", cfg_.model}};
  ojson choice = {{"text", echo_text_ + result_.content}, {"index", cfg_.index}};
  if (logprobs_.asked()) {
    auto entries = echo_entries_;
    entries.insert(entries.end(), logprobs_.all().begin(), logprobs_.all().end());
    choice["logprobs"] = ojson::parse(logprobs_object(entries, 0));
  } else {
    choice["logprobs"] = nullptr;
  }
  choice["finish_reason"] = openai_finish_reason(result_.reason);
  choice["stop_reason"] = openai_stop_reason(result_.stop_sequence, result_.stop_token);
  if (!prompt_logprobs_.is_null())
    choice["prompt_logprobs"] = prompt_logprobs_;
  j["choices"] = ojson::array({choice});
  j["usage"] = usage_json(usage);
  return dump(j);
}

} // namespace deepinfer::recipe
