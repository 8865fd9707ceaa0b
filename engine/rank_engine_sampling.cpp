// rank_engine: what turns logits into tokens and scores (split from rank_engine.cpp): the
// structured-output mask, the sequence's own draw and its parallel samples' draws, and the
// prompt's scores (prompt logprobs).
#include <algorithm>
#include <bit>
#include <limits>

#include "engine/rank_engine.hpp"
#include "engine/rank_engine_sequence.hpp"

namespace deepinfer::engine {

void rank_engine::score_prompt(const sequence& s, prefill_progress& out) {
  // Full mode from a cold start: the tail holds the final state of every prompt row, and row r's
  // logits score token r + 1. A few rows at a time, so the logits buffer stays small.
  const auto& c = model();
  constexpr int64_t rows_at_once = 64;
  std::vector<float> logits(static_cast<std::size_t>(rows_at_once * c.vocab_size));
  out.prompt.reserve(static_cast<std::size_t>(s.prompt_len - 1));
  for (int64_t r0 = 0; r0 + 1 < s.prompt_len; r0 += rows_at_once) {
    const int64_t m = std::min(rows_at_once, s.prompt_len - 1 - r0);
    forward_.logits(s.tail.data() + (r0 - s.decoder_start) * c.hidden, m, logits.data());
    for (int64_t i = 0; i < m; ++i)
      out.prompt.push_back(sampler::score(logits.data() + i * c.vocab_size, c.vocab_size,
                                          s.tokens[static_cast<std::size_t>(r0 + i + 1)],
                                          s.sampling.prompt_logprobs, backend_->kernels().exp_shifted));
  }
}

std::string rank_engine::attach_constraint(sequence& s) const {
  s.constraint.reset();
  if (s.sampling.constraint.empty())
    return {};
  if (!config_.constraints)
    return "this engine has no structured-output compiler (rank_engine::config::constraints)";
  const auto from = std::clamp<int64_t>(s.sampling.output_from, 0, static_cast<int64_t>(s.tokens.size()));
  auto made = config_.constraints->make(s.sampling.constraint,
                                        std::span<const int32_t>{s.tokens}.subspan(static_cast<std::size_t>(from)));
  if (!made.constraint)
    return made.error.empty() ? "the structured-output constraint cannot be built" : made.error;
  s.constraint = std::move(made.constraint);
  return {};
}

namespace {

/// Greedy over the allowed tokens only (ties to the lower id, as the sampler): a pass over the
/// mask's set bits instead of the whole vocabulary. -1 when none is allowed.
int32_t argmax_allowed(const float* logits, int64_t vocab, std::span<const uint64_t> bits) {
  int32_t best = -1;
  for (std::size_t w = 0; w < bits.size(); ++w)
    for (uint64_t b = bits[w]; b != 0; b &= b - 1) {
      const auto t = static_cast<int64_t>(w * 64) + std::countr_zero(b);
      if (t >= vocab)
        return best;
      if (best < 0 || logits[t] > logits[best])
        best = static_cast<int32_t>(t);
    }
  return best;
}

/// Sets every token the mask does not allow to -infinity, in place.
void apply_mask(float* logits, int64_t vocab, std::span<const uint64_t> bits) {
  constexpr float blocked = -std::numeric_limits<float>::infinity();
  for (int64_t w = 0; w * 64 < vocab; ++w) {
    const uint64_t b = static_cast<std::size_t>(w) < bits.size() ? bits[static_cast<std::size_t>(w)] : 0;
    if (b == ~uint64_t{0})
      continue;
    const int64_t end = std::min<int64_t>(vocab, w * 64 + 64);
    for (int64_t t = w * 64; t < end; ++t)
      if (((b >> (t - w * 64)) & 1u) == 0)
        logits[t] = blocked;
  }
}

} // namespace

bool rank_engine::sample_and_append(sequence& s, float* logits, sampled_token& tok) {
  const auto vocab = model().vocab_size;
  // Penalties in place on the sequence's own row, from its own tokens only: a resubmission on
  // another rank continues identically.
  if (s.sampling.processes_logits())
    sampler::process_logits(logits, vocab, s.sampling, s.tokens);
  if (s.constraint) {
    // One token stays for the end (EOS), so a constrained output ends complete, with a stop.
    const int64_t left = std::max<int64_t>(0, int64_t{s.sampling.max_tokens} - s.generated - 1);
    const auto bits = s.constraint->allowed(left);
    const bool plain_greedy = s.sampling.temperature <= 0.0f && !s.sampling.logprobs && s.sampling.top_logprobs == 0;
    const int32_t greedy = plain_greedy ? argmax_allowed(logits, vocab, bits) : -1;
    if (greedy >= 0)
      tok = sampled_token{greedy, 0.0f, {}};
    else {
      // The row is this sequence's own: masked in place (what `logits` outputs return, too).
      apply_mask(logits, vocab, bits);
      tok = sampler::sample(logits, vocab, s.sampling, static_cast<int64_t>(s.tokens.size()),
                            backend_->kernels().exp_shifted);
    }
    s.constraint->advance(tok.id);
  } else
    tok = sampler::sample(logits, vocab, s.sampling, static_cast<int64_t>(s.tokens.size()),
                            backend_->kernels().exp_shifted);
  s.tokens.push_back(tok.id);
  ++s.generated;
  const auto& stops = s.sampling.stop_ids;
  s.finished = s.generated >= s.sampling.max_tokens ||
               std::find(stops.begin(), stops.end(), tok.id) != stops.end();
  return s.finished;
}

sampled_token rank_engine::draw_first(const sequence& s, uint64_t seed, std::vector<float> logits) const {
  const auto vocab = model().vocab_size;
  auto sampling = s.sampling;
  sampling.seed = seed;
  if (sampling.processes_logits())
    sampler::process_logits(logits.data(), vocab, sampling, s.tokens);
  if (s.constraint) {
    // A constraint of its own over the same (empty) output: the sequence's is advanced by its
    // own first token once drawn, never by this one.
    auto made = config_.constraints->make(sampling.constraint, {});
    if (made.constraint) {
      const auto bits = made.constraint->allowed(std::max<int64_t>(0, int64_t{sampling.max_tokens} - 1));
      const bool plain_greedy = sampling.temperature <= 0.0f && !sampling.logprobs && sampling.top_logprobs == 0;
      if (const int32_t greedy = plain_greedy ? argmax_allowed(logits.data(), vocab, bits) : -1; greedy >= 0)
        return sampled_token{greedy, 0.0f, {}};
      apply_mask(logits.data(), vocab, bits);
    }
  }
  // The draw of the same position under its own seed: what a request of that seed draws.
  return sampler::sample(logits.data(), vocab, sampling, static_cast<int64_t>(s.tokens.size()),
                         backend_->kernels().exp_shifted);
}

} // namespace deepinfer::engine
