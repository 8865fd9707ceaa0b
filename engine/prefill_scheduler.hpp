#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "engine/cost_model.hpp"
#include "engine/rank_engine.hpp"

namespace deepinfer::engine {

/// Chunked prefill under a per-step time budget (DESIGN.md §5.3): requests run FIFO; each step
/// gives the head request the largest chunk the fitted cost model says fits the remaining
/// budget, then the next request, until the budget is spent.
class prefill_scheduler {
public:
  /// Scheduler settings.
  struct config {
    /// Time budget of one step, ns.
    double step_budget_ns = 50e6;
    /// A step always makes at least this much progress (so a tiny budget cannot stall).
    int64_t min_chunk = 16;
  };

  /// What one step did.
  struct step_result {
    /// (sequence, chunk size) in run order.
    std::vector<std::pair<sequence_id, int64_t>> chunks;
    /// Prefills that finished in this step, with their first token and logits.
    std::vector<std::pair<sequence_id, prefill_progress>> finished;
    double predicted_ns = 0;
  };

  prefill_scheduler(const config& cfg, rank_engine& engine, const cost_model& model);

  /// Registers the request with the engine and queues it; a non-ok status (invalid,
  /// does_not_fit) means it was not queued.
  prefill_progress submit(const prefill_request& req);
  /// Runs one step.
  step_result step();
  /// Queued (unfinished) prefills.
  std::size_t pending() const { return queue_.size(); }

private:
  struct entry {
    sequence_id seq;
    int64_t length = 0;
  };
  config config_;
  rank_engine& engine_;
  cost_model model_;
  std::deque<entry> queue_;
};

} // namespace deepinfer::engine
