#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/backends/backend.hpp"
#include "engine/kernels/kernel_table.hpp"
#include "engine/model/weights.hpp"

namespace deepinfer::engine {

/// The most draft tokens a head proposes per step (the ring's spare slots bound it, §4.2).
inline constexpr int max_draft_positions = 5;

/// What the draft head proposes after one row: up to `max_draft_positions` tokens, each with the
/// confidence head's predicted probability that the target accepts it given the ones before.
struct draft_proposal {
  int32_t count = 0;
  int32_t tokens[max_draft_positions] = {};
  float confidence[max_draft_positions] = {};
  /// Drafted from the request's prediction (predicted_drafts), not by the head: every draft is
  /// verified and the head's calibration does not learn from it.
  bool predicted = false;
};

/// One drafted position's choice: the token, the softmax of its logit over all the candidates,
/// and whether it is the token before the position.
struct draft_choice {
  int32_t token = 0;
  float top = 0.0f;
  bool repeated = false;
};

/// Picks the draft at one position (`draft_weights`' rule) from `logits` [vd] over the draft
/// vocabulary `vocab` (ascending ids as f32) and the token before the position, `before`, whose
/// logit is its slot's or, outside the vocabulary, the target's own (`lm_head` row . `z`
/// [hidden]), plus `repeat`. Ties go to the lower index, then to the vocabulary. The same on
/// every ISA: scalar code in a fixed order, and the softmax's exponentials through `k` (null:
/// the portable kernels; every table's give the same bits), summed in double in vocabulary order.
/// `with_top` false leaves `top` 0 (a search that only needs the token skips the softmax).
draft_choice choose_draft(const float* logits, const float* vocab, int64_t vd, const float* lm_head, int64_t vocab_size,
                          const float* z, int64_t hidden, int32_t before, float repeat, bool with_top = true,
                          const kernels::kernel_table* k = nullptr);

/// The DSpark-style draft head (DESIGN.md §5.1, `draft_weights`): base logits of every drafted
/// position from one matrix product over the rows' final states, then the previous-token bias
/// and the confidence per position. Deterministic and ISA-independent: the products go through
/// the backend's matmul (bit-identical on every ISA), the rest is scalar code in a fixed order.
class draft_head {
public:
  draft_head(const model_weights& w, backend& b);

  /// Drafts after `n` rows: `x` [n x hidden] their final hidden states (before the final norm),
  /// `prev[i]` the token the target chose after row i (the first draft's previous token).
  void propose(const float* x, const int32_t* prev, int64_t n, draft_proposal* out);

  /// The intermediate values of one row (for distillation): z [P x hidden] the normed
  /// projections, logits [P x Vd] with the bias of the given previous tokens `prev_of` (P of them:
  /// the token before each drafted position), and each position's choice given them.
  void features(const float* x, const int32_t* prev_of, float* z, float* logits, draft_choice* choices);

  /// Hands the head's matrices to the backend (at load, like the forward's).
  void prepare_weights();

  const model_config& config() const { return w_.config(); }

private:
  const model_weights& w_;
  const draft_weights& d_;
  backend& b_;
  /// Adds the previous-token bias of `before[i]` to the `n` logit rows at `logits + i * stride`.
  void add_biases(const int32_t* before, int64_t n, float* logits, int64_t stride);

  std::vector<float> xn_, proj_, z_, logits_, u_, bias_;
};

/// The draft head's tensors in `draft_tensor_specs` order, as values (what mkmodel draws and
/// distillation fits).
struct draft_tensors {
  std::vector<std::vector<float>> values;
};

/// Seeded random draft tensors for `c` (mkmodel): the head drafts badly until distilled.
draft_tensors random_draft_tensors(const model_config& c, uint64_t seed);
/// Writes `dir/draft.safetensors`; an error text, or empty.
std::string write_draft_file(const model_config& c, const draft_tensors& t, const std::string& dir);

} // namespace deepinfer::engine
