#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/kernels/isa.hpp"
#include "engine/model/draft_head.hpp"

namespace deepinfer::engine {

/// How often the target accepts the draft head's tokens, measured by the engine itself
/// (verify_step with every draft, greedy).
struct draft_acceptance {
  /// Per draft position j: of the steps whose drafts 0..j-1 were all accepted, the share that
  /// accepted draft j too; and the share of all steps that accepted drafts 0..j.
  std::array<double, max_draft_positions> conditional{};
  std::array<double, max_draft_positions> cumulative{};
  /// Mean tokens emitted per request per verify step (accepted drafts + the target's own).
  double mean_tokens_per_step = 0.0;
  int64_t steps = 0;
};

/// Settings of `distill_draft`.
struct distill_config {
  std::string model_dir;
  /// Rollouts: this many random prompts of `prompt_len` tokens, `tokens` decode steps each; half
  /// greedy, half sampled (temperature 0.8, top-k 40); then as many greedy ones from another
  /// seed, held out from the first fits.
  int prompts = 64;
  int prompt_len = 32;
  int tokens = 96;
  /// Held-out prompts (another seed) for the acceptance before and after.
  int eval_prompts = 16;
  int eval_tokens = 64;
  uint64_t seed = 1;
  int threads = 2;
  std::optional<kernels::cpu_isa> isa;
  /// Ridge of the projections' least squares (relative to the mean diagonal).
  double ridge = 1e-3;
};

/// What `distill_draft` did.
struct distill_result {
  std::string error;
  draft_acceptance before, after;
  int64_t samples = 0;
};

/// Measures the acceptance of the head in `dir` on `prompts` random prompts from `seed`.
std::optional<draft_acceptance> measure_draft_acceptance(const std::string& dir, int prompts, int prompt_len,
                                                         int tokens, uint64_t seed, int threads,
                                                         std::optional<kernels::cpu_isa> isa, std::string* error);

/// Fits the model's draft head on the target's own rollouts and writes it back
/// (`dir/draft.safetensors`): the projections by least squares onto the target's later hidden
/// states, the output rows from the target's lm_head over the rollouts' most frequent ids, the
/// previous-token bias peaking at the id that most often followed each previous id (its
/// strength chosen on the rollouts), and the confidence by logistic regression on whether each
/// draft is accepted, on a second set of rollouts (as many, another seed) that the rest was not
/// fitted on, at the positions a speculating rank would draft from. Each position's candidates include the token before it (`choose_draft`).
distill_result distill_draft(const distill_config& cfg);

} // namespace deepinfer::engine
