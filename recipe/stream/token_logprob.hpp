#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace deepinfer::recipe {

/// One generated token's log-probability with its most likely alternatives, as OpenAI's
/// `ChatCompletionTokenLogprob` reports it.
struct token_logprob {
  struct alternative {
    std::string token; ///< the token's raw bytes (a piece of UTF-8 at most)
    float logprob = 0.0f;
  };
  std::string token; ///< the token's raw bytes (a piece of UTF-8 at most)
  float logprob = 0.0f;
  /// Best first; empty unless `top_logprobs` was asked for.
  std::vector<alternative> top;
};

/// `entries` as OpenAI's `logprobs.content` array: each `{token, logprob, bytes, top_logprobs}`,
/// `token` the text (bytes that are not whole UTF-8 replaced when dumped with the replace
/// handler) and `bytes` the raw bytes as integers.
nlohmann::ordered_json logprobs_json(std::span<const token_logprob> entries);

} // namespace deepinfer::recipe
