#pragma once

#include <cstdint>
#include <span>
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
  /// vLLM's: drop the ids whose probability (at this temperature) is below `min_p` times the
  /// most likely one's, before top-k and top-p; 0 means all.
  float min_p = 0.0f;
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
  /// `output_from` of the sequence (the request's own prompt length: a resubmitted request's
  /// earlier output is part of its tokens).
  std::string constraint;
  /// Where the request's own output starts in a sequence's tokens: its own prompt length (0:
  /// the sequence's prompt, as for a request never resubmitted). A resubmitted request's tokens
  /// hold its earlier output; the constraint and the penalties count from here (and the random
  /// draw is a function of the seed and the absolute position: `sampler::sample`), so a request
  /// continues anywhere as if it had never moved.
  int64_t output_from = 0;
  /// OpenAI's penalties over the output so far (the sequence's tokens from `output_from`,
  /// the request's own prompt length, on): a token's logit drops by `frequency_penalty` per time
  /// it appeared and by `presence_penalty` once if it appeared at all. 0: off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  /// vLLM's: a token of the prompt or the output has its logit divided by this when positive,
  /// multiplied when negative. 1: off.
  float repetition_penalty = 1.0f;
  /// vLLM's: the stop ids cannot be drawn before this many output tokens.
  int32_t min_tokens = 0;
  /// OpenAI's: (id, bias) added to the logits before sampling (bias in [-100, 100]).
  std::vector<std::pair<int32_t, float>> logit_bias;
  /// vLLM's `allowed_token_ids` (sorted, unique): no other id can be drawn; empty: any.
  std::vector<int32_t> allowed_ids;
  /// vLLM's `bad_words` as token sequences: an id that would end one of them after the output so
  /// far cannot be drawn (a one-token word never can).
  std::vector<std::vector<int32_t>> bad_words;
  /// OpenAI's Predicted Outputs: the expected answer's token ids, offered as drafts
  /// (predicted_drafts) and verified, so the output is the same as without them; empty: none.
  std::vector<int32_t> prediction;
  /// Anthropic's thinking budget: once the output holds `thinking_budget` tokens and none of
  /// them is `thinking_end` (`</think>`), the next token is `thinking_end`, so the reasoning
  /// ends there and the answer follows. -1: no budget.
  int32_t thinking_budget = -1;
  int32_t thinking_end = -1;
  /// Prompt log-probabilities (legacy Completions' `echo` with `logprobs`): -1 none; otherwise
  /// each prompt token's log-probability given the tokens before it (from the second token on)
  /// with this many alternatives. The prefill then runs cold (no prefix hit: the decoder needs
  /// the encoder's output at every position) with the decoder over the whole prompt.
  int32_t prompt_logprobs = -1;

  /// Whether any logit processing (penalties, min_tokens, logit_bias, allowed ids, bad words, a
  /// thinking budget) is asked for.
  bool processes_logits() const noexcept {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f || min_tokens > 0 ||
           !logit_bias.empty() || !allowed_ids.empty() || !bad_words.empty() ||
           (thinking_budget >= 0 && thinking_end >= 0);
  }
};

/// One sampled token with its log-probability under the temperature-1 distribution.
struct sampled_token {
  int32_t id = 0;
  /// Set when logprobs or top_logprobs was asked for; 0 otherwise.
  float logprob = 0.0f;
  /// The most likely ids with their logprobs, best first (top_logprobs of them).
  std::vector<std::pair<int32_t, float>> top;
  /// `score` only: the id's rank in the vocabulary, 1 + the ids with a larger logit (vLLM's).
  int32_t rank = 0;
};

/// Turns one row of logits into a token. Stateless: the random stream is counter-based.
class sampler {
public:
  /// Samples from `logits[0..vocab)` under `p` the token at sequence position `position` (the
  /// number of tokens before it, prompt included). At temperature > 0 its one random draw is
  /// `random_bits(p.seed, position)`: a function of the seed and the position only, so a
  /// request moved to another rank (rerouted, handed off, speculated) draws what it would have
  /// drawn in place, whatever it drew before.
  /// A vectorized `out[i] = exp(x[i] - shift)` with the canonical exp's bits
  /// (kernels::kernel_table::exp_shifted); a null one: the scalar canonical exp, the same bits.
  using exp_fn = void (*)(const float* x, int64_t n, float shift, float* out);

  static sampled_token sample(const float* logits, int64_t vocab, const sampling_params& p, int64_t position,
                              exp_fn exps = nullptr);

  /// The log-probability of `id` under the temperature-1 distribution of `logits[0..vocab)`, and
  /// the `top_n` most likely ids with theirs (best first, ties to the lower id): `sample`'s
  /// figures for a token that was given, not drawn (a prompt token). One pass for the normalizer,
  /// one for the top ids (no sort of the vocabulary).
  static sampled_token score(const float* logits, int64_t vocab, int32_t id, int32_t top_n, exp_fn exps = nullptr);

  /// The 64 random bits of position `position` under `seed` (SplitMix64's output at step
  /// `position` of a stream that starts at a mix of `seed`).
  static uint64_t random_bits(uint64_t seed, int64_t position);

  /// Applies `p`'s penalties, min_tokens, logit_bias, allowed ids and bad words to
  /// `logits[0..vocab)` in place, given the sequence's `tokens` (prompt, then output from
  /// `p.output_from`). Touches only the ids that occur in `tokens`, the bias or the bad words
  /// (a pass over the vocabulary only for allowed ids or a spent thinking budget) and depends on
  /// nothing but the tokens, so a resubmitted sequence continues identically. A no-op unless
  /// `p.processes_logits()`.
  static void process_logits(float* logits, int64_t vocab, const sampling_params& p,
                             std::span<const int32_t> tokens);
};

} // namespace deepinfer::engine
