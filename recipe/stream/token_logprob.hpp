#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "recipe/stream/stream_event.hpp"

namespace deepinfer::recipe {

/// One generated token's log-probability with its most likely alternatives, as OpenAI's
/// `ChatCompletionTokenLogprob` reports it.
struct token_logprob {
  struct alternative {
    std::string token; ///< the token's raw bytes (a piece of UTF-8 at most)
    float logprob = 0.0f;
    std::int32_t id = -1; ///< the token id (vLLM's prompt_logprobs keys by it)
  };
  std::string token; ///< the token's raw bytes (a piece of UTF-8 at most)
  float logprob = 0.0f;
  /// Best first; empty unless `top_logprobs` was asked for.
  std::vector<alternative> top;
  std::int32_t id = -1;
  /// Its rank in the vocabulary (1: the most likely), when the engine reported it (0: not).
  std::int32_t rank = 0;
};

/// `entries` as OpenAI's `logprobs.content` array: each `{token, logprob, bytes, top_logprobs}`,
/// `token` the text (bytes that are not whole UTF-8 replaced when dumped with the replace
/// handler) and `bytes` the raw bytes as integers.
nlohmann::ordered_json logprobs_json(std::span<const token_logprob> entries);

/// vLLM's `prompt_logprobs` of a prompt's `entries` (token by token; a NaN logprob, the first
/// token's, is null): per token an object keyed by token id, the token's own
/// `{logprob, rank, decoded_token}` first, then each alternative's (rank: its place, from 1).
nlohmann::ordered_json prompt_logprobs_json(std::span<const token_logprob> entries);

/// The entries of APIs that put each token's log-probability on the text it became (Responses'
/// output text, legacy Completions' chunks): `hold` one token's entry before that token's events,
/// `take` each event. Text takes every held entry (a token whose bytes waited for the next one's
/// rides along); anything else (reasoning, a tool call, the finish) drops them.
class text_logprobs {
public:
  void hold(std::span<const token_logprob> entries) {
    asked_ = true;
    held_.insert(held_.end(), entries.begin(), entries.end());
  }
  /// The entries `e`'s text carries (empty for anything but text).
  std::vector<token_logprob> take(const stream_event& e);
  /// Every entry text took so far (the non-streaming body).
  const std::vector<token_logprob>& all() const noexcept { return all_; }
  /// Whether any entry was ever held (the request asked for log-probabilities).
  bool asked() const noexcept { return asked_; }

private:
  std::vector<token_logprob> held_;
  std::vector<token_logprob> all_;
  bool asked_ = false;
};

} // namespace deepinfer::recipe
