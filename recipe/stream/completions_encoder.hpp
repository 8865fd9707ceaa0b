#pragma once

#include "recipe/stream/completion.hpp"
#include "recipe/stream/openai_stream_config.hpp"
#include "recipe/stream/stream_event.hpp"
#include "recipe/stream/token_logprob.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::recipe {

/// Writes parser events as OpenAI's legacy Completions output (`/v1/completions`): one
/// `text_completion` SSE chunk per piece of text, a finish chunk, the usage chunk when
/// `include_usage`, then `[DONE]`; or the `text_completion` body. Log-probabilities come in the
/// legacy shape (`tokens`, `token_logprobs`, `top_logprobs` as {token: logprob}, `text_offset`),
/// each on the chunk whose text its token became.
class completions_encoder {
public:
  struct config : openai_stream_config {
  };

  explicit completions_encoder(config cfg) : cfg_(std::move(cfg)) {}

  /// The usage the next chunks carry (`continuous_usage`).
  void usage_now(const usage_counts& u) { live_ = u; }

  /// Nothing: a legacy stream starts with its first text.
  std::string start() { return {}; }
  std::string encode(std::span<const stream_event> events, const usage_counts& usage);
  /// The end of a stream: the usage chunk (when `include_usage`) and `data: [DONE]`.
  std::string end(const usage_counts& usage) const;
  void apply(std::span<const stream_event> events);
  /// Log-probabilities of the next tokens (give one token's before its events): held until
  /// the text they became is encoded or applied.
  void logprobs(std::span<const token_logprob> entries) { logprobs_.hold(entries); }
  /// `echo`: the completion's text starts with `text` (the prompt) and, when `with_logprobs`,
  /// its log-probabilities with `entries` (the prompt's tokens; a NaN logprob is null: the
  /// first token's). Before any other output; returns the stream's chunk of it.
  std::string echo(std::string text, std::vector<token_logprob> entries, bool with_logprobs);
  /// vLLM's `prompt_logprobs` (prompt_logprobs_json) for the body's choice; never streamed.
  void prompt_logprobs(nlohmann::ordered_json j) { prompt_logprobs_ = std::move(j); }
  /// An error chunk (`data: {"error": ...}`, which the SDKs raise), then `[DONE]`.
  std::string fail(std::string_view type, std::string_view code, std::string_view message);
  std::string body(const usage_counts& usage) const;
  const completion& result() const noexcept { return result_; }

private:
  /// The legacy `logprobs` object of `entries`, whose text starts at `offset` characters into
  /// the completion.
  static std::string logprobs_object(std::span<const token_logprob> entries, std::size_t offset);
  std::string chunk(const std::string& text, const std::string& logprobs_json, const char* finish,
                    const std::string& stop_reason_json = "null") const;

  config cfg_;
  usage_counts live_;
  completion result_;
  text_logprobs logprobs_;
  std::size_t chars_ = 0;          ///< characters of text streamed so far (text_offset)
  std::string echo_text_;
  std::vector<token_logprob> echo_entries_;
  nlohmann::ordered_json prompt_logprobs_;
};

} // namespace deepinfer::recipe
