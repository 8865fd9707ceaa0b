#pragma once

#include "recipe/stream/completion.hpp"
#include "recipe/stream/stream_event.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace deepinfer::recipe {

/// Writes parser events as Anthropic Messages output: `message_start`, one content block per
/// thinking / text / tool_use run (`content_block_start`, `thinking_delta` / `text_delta` /
/// `input_json_delta`, `content_block_stop`), `message_delta` with the stop reason and usage, and
/// `message_stop`; or the `message` object as the non-streaming body.
class messages_encoder {
public:
  struct config {
    std::string id = "msg_0";
    std::string model;
  };

  explicit messages_encoder(config cfg) : cfg_(std::move(cfg)) {}

  /// `message_start` (reports the prompt's input and cache-read tokens).
  std::string start(const usage_counts& usage);
  /// SSE events for `events`; `usage` is read at `finish`.
  std::string encode(std::span<const stream_event> events, const usage_counts& usage);
  /// The end of a stream cut short by the server (deadline, overload, a failure): the API's
  /// error event (`event: error`, after which Anthropic's streams end). `type` and `code` are the error's type and code in the API's terms.
  std::string fail(std::string_view type, std::string_view code, std::string_view message);
  /// The `message` body of everything encoded or applied so far.
  std::string body(const usage_counts& usage) const;
  void apply(std::span<const stream_event> events) { result_.apply(events); }
  const completion& result() const noexcept { return result_; }

private:
  enum class block : std::uint8_t { none, thinking, text, tool_use };
  std::string close_block();
  nlohmann::ordered_json message_json(nlohmann::ordered_json content, const char* stop_reason,
                                      nlohmann::ordered_json usage) const;

  config cfg_;
  completion result_;
  block open_ = block::none;
  std::size_t index_ = 0;  // index of the open block
  std::size_t blocks_ = 0; // blocks opened so far
};

/// `end_turn` / `max_tokens` / `tool_use`.
const char* anthropic_stop_reason(finish_reason r);

} // namespace deepinfer::recipe
