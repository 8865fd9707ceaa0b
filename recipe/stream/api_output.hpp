#pragma once

#include <span>
#include <string>
#include <variant>

#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/conversation.hpp"
#include "recipe/stream/chat_encoder.hpp"
#include "recipe/stream/completions_encoder.hpp"
#include "recipe/stream/messages_encoder.hpp"
#include "recipe/stream/responses_encoder.hpp"

namespace deepinfer::recipe {

/// The output side of one request in the API it arrived on: one of recipe's four encoders
/// behind one interface, so the request actor does not care which API it serves.
class api_output {
public:
  /// `id` is the request's public id in the API's style (api_ids::response). `index` is the
  /// choice this output writes of `choices` (OpenAI's `n`; Chat and legacy Completions only):
  /// with more than one, no choice's finish ends the stream (`end` does, once all finished).
  api_output(const recipe::conversation& conv, const std::string& id, int64_t created, int index = 0,
             int choices = 1);

  /// The first SSE bytes of a stream.
  std::string start(const recipe::usage_counts& usage);
  /// SSE bytes for `events` (a stream); `usage` is read at the finish event.
  std::string encode(std::span<const recipe::stream_event> events, const recipe::usage_counts& usage);
  /// The log-probabilities of the next generated tokens, before the events they produce are
  /// encoded or applied (give it one token's entry before that token's events): kept for the
  /// body and, streaming, for the next chunk (Chat) or output-text event (Responses, legacy
  /// Completions) those tokens produce. Messages has no logprobs: ignored.
  void logprobs(std::span<const recipe::token_logprob> entries, bool stream);
  /// Legacy Completions' `echo` (completions_encoder::echo): the prompt before the first output;
  /// returns the stream's bytes of it. Other APIs have no echo: nothing.
  std::string echo(std::string text, std::vector<recipe::token_logprob> entries, bool with_logprobs);
  /// vLLM's `prompt_logprobs` for the body (Chat: on the response; legacy Completions: on the
  /// choice). Other APIs have none: nothing.
  void prompt_logprobs(nlohmann::ordered_json j);
  /// The SSE bytes that end a stream of several choices (the usage chunk, `[DONE]`).
  std::string end(const recipe::usage_counts& usage) const;
  /// The body of a request of several choices: `first` (choice 0's body, with the request's
  /// usage) with the `choices` of `others` (each one choice's body) appended in order.
  static std::string with_choices(const std::string& first, std::span<const std::string> others);
  /// Records events without output (non-streaming requests).
  void apply(std::span<const recipe::stream_event> events);
  /// The non-streaming JSON body.
  std::string body(const recipe::usage_counts& usage) const;
  /// The SSE bytes that end a stream cut short (the API's error event; see the encoders' fail).
  std::string fail(std::string_view type, std::string_view code, std::string_view message,
                   const recipe::usage_counts& usage);
  /// The error body of `e` for a non-streamed request cut short, with what was generated so
  /// far under `partial` (the API's own body, its finish / stop reason null).
  std::string failed_body(const recipe::api_error& e, const recipe::usage_counts& usage) const;
  /// What was generated so far (reasoning, text, tool calls).
  const recipe::completion& result() const;
  /// Responses only (a background turn): the response object not started yet, status `queued`.
  std::string queued_body() const;
  /// Responses only (a background turn cancelled by its client): `body` reads `cancelled` from
  /// now on; streaming, the SSE bytes that close the open item.
  std::string cancel();

private:
  std::variant<recipe::chat_encoder, recipe::responses_encoder, recipe::messages_encoder, recipe::completions_encoder>
    enc_;
};

} // namespace deepinfer::recipe
