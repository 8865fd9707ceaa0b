#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "balancers/cost_model.hpp"
#include "engine/rank_engine.hpp"

namespace deepinfer::engine {

/// Chunked prefill under a per-step time budget (DESIGN.md §5.3): requests run FIFO; each step
/// gives the head request the largest chunk the fitted cost model says fits the remaining
/// budget, then the next request, until the budget is spent. Optionally (`long_prompt_steps`)
/// long prompts do not hold up short ones: see `config`.
class prefill_scheduler {
public:
  /// Scheduler settings.
  struct config {
    /// Time budget of one step, ns.
    double step_budget_ns = 50e6;
    /// A step always makes at least this much progress (so a tiny budget cannot stall).
    int64_t min_chunk = 16;
    /// A prompt whose remaining prefill is predicted to take more than this many step budgets
    /// is long. While a long prompt is queued, the shorter ones lead each step (FIFO among
    /// them) and the long one takes what is left of it, so a short prompt that arrives behind
    /// a 30K-token one waits for the step in progress only. Should the shorter ones have
    /// taken more than `short_share` of the last step's budget, the oldest long prompt leads
    /// this one instead: a stream of short prompts cannot starve a long one, which still gets
    /// at least every other step. 0: plain FIFO.
    double long_prompt_steps = 0;
    /// The part of a step the shorter prompts may take before a waiting long one leads the
    /// next step (see `long_prompt_steps`).
    double short_share = 0.5;
    /// When the finishing pass alone costs more than a step budget (a small budget, a CPU
    /// model), a prompt whose rest fits the budget without that pass finishes in this step
    /// rather than leaving a few tokens to a later step that overruns the budget anyway.
    bool finish_over_budget = false;
    /// Scale the cost model's predictions by the measured ratio of a step's wall time to its
    /// prediction (a moving average), so the budget holds on a CPU, ISA or load the model was
    /// not fitted on (a model fitted with AVX-512 kernels underestimates portable ones ~20x).
    bool adapt = true;
  };

  /// What one step did.
  struct step_result {
    /// (sequence, chunk size) in run order; empty when every queued prefill waits for its
    /// blocks (`prefill_request::blocks_later`).
    std::vector<std::pair<sequence_id, int64_t>> chunks;
    /// Prefills that finished in this step, with their first token and logits.
    std::vector<std::pair<sequence_id, prefill_progress>> finished;
    /// The step's predicted and measured wall time (ns): the prediction is the cost model's,
    /// scaled by the correction in force.
    double predicted_ns = 0;
    double measured_ns = 0;
  };

  prefill_scheduler(const config& cfg, rank_engine& engine, const deepinfer::balancers::cost_model& model);

  /// Registers the request with the engine and queues it; a non-ok status (invalid,
  /// does_not_fit) means it was not queued.
  prefill_progress submit(const prefill_request& req);
  /// Runs one step. `finished_now`, when given, gets each prefill that finishes as soon as it
  /// does, before the step's later chunks run (a short prompt's first token does not wait for
  /// the long prompt's chunk that follows it); such prefills are not in `finished`.
  step_result step(const std::function<void(sequence_id, prefill_progress&)>& finished_now = {});
  /// Takes a queued prefill out of the queue (the caller frees the sequence); false when it is
  /// not queued.
  bool cancel(sequence_id seq);
  /// Queued (unfinished) prefills.
  std::size_t pending() const { return queue_.size(); }
  /// What the cost model's predictions are multiplied by (1 until steps are measured).
  double correction() const { return correction_; }

private:
  struct entry {
    sequence_id seq;
    int64_t length = 0;
  };
  /// A queue position, and whether this step counts it as a shorter prompt beside a long one.
  struct slot {
    std::size_t index = 0;
    bool shorter_beside_long = false;
  };
  /// Queue positions in the order this step serves them.
  std::vector<slot> step_order() const;
  bool is_long(const entry& e) const;
  config config_;
  rank_engine& engine_;
  deepinfer::balancers::cost_model model_;
  std::deque<entry> queue_;
  /// Predicted ns the shorter prompts took in the last step while a long one waited (see
  /// `config::long_prompt_steps`).
  double shorter_spent_ = 0;
  double correction_ = 1.0;
  /// The cost model's prediction in measured ns.
  double predict(int64_t q, int64_t c, bool last = false) const { return model_.predict(q, c, last) * correction_; }
};

} // namespace deepinfer::engine
