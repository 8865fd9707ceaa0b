#pragma once

#include "recipe/protocol/conversation.hpp"
#include "recipe/stream/completion.hpp"
#include "recipe/stream/stream_event.hpp"
#include "recipe/stream/token_logprob.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace deepinfer::recipe {

/// Writes parser events as OpenAI Responses API output: `response.created`, `in_progress`, one
/// output item per reasoning / message / function call (`output_item.added`, `content_part.added`,
/// `reasoning_text.delta` / `output_text.delta` / `function_call_arguments.delta`, their `.done`
/// events, `output_item.done`), then `response.completed` (or `response.incomplete` at the token
/// limit); or the final `response` object as the non-streaming body.
class responses_encoder {
public:
  struct config {
    std::string id = "resp_0";
    std::string model;
    std::int64_t created = 0;
    /// Request fields the response object echoes (instructions, tools, tool_choice, metadata, …);
    /// see `responses_echo`.
    nlohmann::ordered_json echo = nlohmann::ordered_json::object();
  };

  explicit responses_encoder(config cfg) : cfg_(std::move(cfg)) {}

  /// `response.created` and `response.in_progress`.
  std::string start();
  /// SSE events for `events`; `usage` is read at `finish`.
  std::string encode(std::span<const stream_event> events, const usage_counts& usage);
  /// The end of a stream cut short by the server (deadline, overload, a failure): the API's
  /// error event (the open item closed, an `error` event, then `response.failed` with the
  /// response as it stands, status `failed`). `type` and `code` are the error's type and code in the API's terms.
  std::string fail(std::string_view type, std::string_view code, std::string_view message,
                   const usage_counts& usage);
  /// The `response` object of a background turn not started yet: status `queued`, no output.
  std::string queued() const;
  /// A background turn cancelled by its client: the response's status becomes `cancelled`, its
  /// output what was generated (the last item incomplete). Streaming, the SSE bytes that close
  /// the open item (the stream then just ends: the API has no cancelled event).
  std::string cancel();
  /// The `response` object of everything encoded or applied so far.
  std::string body(const usage_counts& usage) const;
  void apply(std::span<const stream_event> events);
  /// Log-probabilities of the next generated tokens (the request asked for them): held until
  /// the events those tokens produce are encoded or applied, then carried by the output text
  /// they became (`output_text.delta`, `.done`, the content part, the body). Tokens that become
  /// reasoning or a tool call have no place in a Responses object: theirs are dropped.
  void logprobs(std::span<const token_logprob> entries) { logprobs_.hold(entries); }
  const completion& result() const noexcept { return result_; }

private:
  enum class item : std::uint8_t { none, reasoning, message, call };
  std::string event(nlohmann::ordered_json j);
  std::string close_item();
  nlohmann::ordered_json response(const usage_counts& usage, bool final) const;
  nlohmann::ordered_json item_json(item kind, std::size_t call, bool done) const;
  std::string item_id(item kind, std::size_t call) const;

  config cfg_;
  completion result_;
  std::int64_t seq_ = 0;
  item open_ = item::none;
  std::size_t output_index_ = 0; // index of the open item
  std::size_t items_ = 0;        // items opened so far
  std::string text_;             // text of the open reasoning / message item
  std::size_t call_ = 0;         // the open call's index
  std::vector<nlohmann::ordered_json> done_items_;
  nlohmann::ordered_json failure_; // {code, message} once fail() ran
  bool streamed_ = false;  // encode() ran: the output is the items it closed
  bool cancelled_ = false;
  bool truncated_ = false; // the answer was cut (token limit, failure): the open item is incomplete
  text_logprobs logprobs_;
  std::vector<token_logprob> item_logprobs_; // the open message item's
};

/// The request fields a Responses object echoes, from the parsed conversation.
nlohmann::ordered_json responses_echo(const conversation& conv);

} // namespace deepinfer::recipe
