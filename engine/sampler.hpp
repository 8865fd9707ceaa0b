#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace deepinfer::engine {

/// Per-request sampling settings (DESIGN.md §5.3).
struct sampling_params {
  /// 0 means greedy (argmax, ties to the lower id).
  float temperature = 0.0f;
  /// Keep the k most likely ids; 0 means all.
  int32_t top_k = 0;
  /// Keep the smallest set whose probability reaches p; 1 means all.
  float top_p = 1.0f;
  /// Seed of the request's own generator: the same seed gives the same tokens.
  uint64_t seed = 0;
  /// Generation stops after emitting any of these (the stop id is emitted).
  std::vector<int32_t> stop_ids;
  /// Generation stops after this many tokens (counting the prefill's first token).
  int32_t max_tokens = 16;
  /// Report the sampled token's log-probability (costs a pass over the vocabulary).
  bool logprobs = false;
  /// How many (id, logprob) pairs of the full distribution to report per token (implies logprobs).
  int32_t top_logprobs = 0;
  /// Structured output: an opaque spec the engine's `token_constraint_factory` turns into a
  /// token mask per step (empty: unconstrained), over the output from token position
  /// `constraint_from` of the sequence (the request's own prompt length: a resubmitted request's
  /// earlier output is part of its tokens).
  std::string constraint;
  int64_t constraint_from = 0;
};

/// One sampled token with its log-probability under the temperature-1 distribution.
struct sampled_token {
  int32_t id = 0;
  /// Set when logprobs or top_logprobs was asked for; 0 otherwise.
  float logprob = 0.0f;
  /// The most likely ids with their logprobs, best first (top_logprobs of them).
  std::vector<std::pair<int32_t, float>> top;
};

/// Turns one row of logits into a token. Stateless; the caller owns each request's generator.
class sampler {
public:
  /// Samples from `logits[0..vocab)` under `p`, drawing from `rng` only when temperature > 0.
  static sampled_token sample(const float* logits, int64_t vocab, const sampling_params& p,
                              std::mt19937_64& rng);
};

} // namespace deepinfer::engine
