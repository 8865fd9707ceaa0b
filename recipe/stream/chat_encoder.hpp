#pragma once

#include "recipe/stream/completion.hpp"
#include "recipe/stream/openai_stream_config.hpp"
#include "recipe/stream/stream_event.hpp"
#include "recipe/stream/token_logprob.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace deepinfer::recipe {

/// Writes parser events as OpenAI Chat Completions output: `chat.completion.chunk` SSE events
/// (`reasoning_content`, `content` and `tool_calls` deltas, a finish chunk, the usage chunk when
/// `include_usage`, then `[DONE]`) or, at the end, the `chat.completion` body.
class chat_encoder {
public:
  struct config : openai_stream_config {
    /// vLLM's `echo`: text the answer's content starts with (the final assistant message's),
    /// streamed right after the role chunk.
    std::string echo = {};
  };

  explicit chat_encoder(config cfg);

  /// The usage the next chunks carry (`continuous_usage`).
  void usage_now(const usage_counts& u) { live_ = u; }

  /// The first chunk (role).
  std::string start();
  /// Chunks for `events`; on `finish` also the usage chunk and `data: [DONE]`. `usage` is read
  /// only at `finish`.
  std::string encode(std::span<const stream_event> events, const usage_counts& usage);
  /// The end of a stream: the usage chunk (when `include_usage`) and `data: [DONE]`.
  std::string end(const usage_counts& usage) const;
  /// The end of a stream cut short by the server (deadline, overload, a failure): the API's
  /// error event (a `data: {"error": ...}` chunk, which the SDKs raise, then `data: [DONE]`). `type` and `code` are the error's type and code in the API's terms.
  std::string fail(std::string_view type, std::string_view code, std::string_view message);
  /// The non-streaming body of everything encoded (or `apply`-ed) so far.
  std::string body(const usage_counts& usage) const;
  /// Records events without writing chunks (non-streaming requests).
  void apply(std::span<const stream_event> events) { result_.apply(events); }
  /// Log-probabilities of the next generated tokens (the request asked for `logprobs`): kept
  /// for the body and, when streaming, carried by the next chunk `encode` writes, so an entry
  /// comes with the text its token became, as OpenAI's chunks carry them (a token with no text
  /// of its own yet: held back by a stop string, half a UTF-8 character, template markup, rides
  /// on the next chunk; the last ride on the finish chunk). Call it before `encode` of the events
  /// those tokens produced.
  void logprobs(std::span<const token_logprob> entries, bool stream);
  /// vLLM's `prompt_logprobs` (prompt_logprobs_json) for the body; never streamed.
  void prompt_logprobs(nlohmann::ordered_json j) { prompt_logprobs_ = std::move(j); }
  const completion& result() const noexcept { return result_; }

private:
  /// One chunk; it carries the held entries (`pending_`) and clears them.
  /// One chunk; a finishing one (`finish` set) carries vLLM's `stop_reason` (`stop_reason_json`).
  std::string chunk(std::string delta_json, const char* finish, const std::string& stop_reason_json = "null");

  config cfg_;
  usage_counts live_;
  completion result_;
  /// Every token's entry so far; the body's `logprobs` is null while none arrived.
  std::vector<token_logprob> logprobs_;
  /// Streaming: entries no chunk has carried yet.
  std::vector<token_logprob> pending_;
  nlohmann::ordered_json prompt_logprobs_;
};

/// `stop` / `length` / `tool_calls`.
const char* openai_finish_reason(finish_reason r);

/// vLLM's `stop_reason` of a choice: the stop sequence that ended it (a string), the stop token
/// id (vLLM's `stop_token_ids`: a number), or null (EOS, the token limit).
nlohmann::ordered_json openai_stop_reason(const std::string& stop_sequence, std::int32_t stop_token);

/// The end of a Chat Completions or Completions chunk from its choice's `finish_reason` on: the
/// reason (null until the last chunk) with vLLM's `stop_reason`, the choice's close, the usage
/// (`usage_text()` under vLLM's continuous usage, null under `include_usage`, absent otherwise)
/// and the SSE event's end.
template <class UsageText>
void append_chunk_end(std::string& s, const char* finish, const std::string& stop_reason_json,
                      bool continuous_usage, bool include_usage, UsageText usage_text) {
  s += ",\"finish_reason\":";
  s += finish ? "\"" + std::string(finish) + "\"" : std::string("null");
  if (finish)
    s += ",\"stop_reason\":" + stop_reason_json;
  s += "}]";
  if (continuous_usage)
    s += ",\"usage\":" + usage_text();
  else if (include_usage)
    s += ",\"usage\":null";
  s += "}\n\n";
}

} // namespace deepinfer::recipe
