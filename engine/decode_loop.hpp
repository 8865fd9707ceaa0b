#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "engine/ids.hpp"
#include "engine/rank_engine.hpp"
#include "engine/spec_planner.hpp"

namespace deepinfer::engine {

/// One decode step over `seqs`: one token each (`planner` null), or each sequence's drafts as the
/// planner chooses them, verified in one forward (the step timed for the planner's cost curve).
/// The outputs are in the order of `seqs`. The synchronous rank and `decode_loop` both step
/// with it.
std::vector<verify_output> run_decode_step(rank_engine& engine, spec_planner* planner,
                                           std::span<const sequence_id> seqs);

/// The share of time a compute thread waits between two steps of a running batch over step time,
/// exponentially weighted over about the last 20 steps (deepinfer_decode_idle_fraction). Waiting
/// for requests (an empty batch) is not idling.
class idle_meter {
public:
  using clock = std::chrono::steady_clock;
  /// One step from `start` to `end`; `goes_on`: the batch is not empty after it, so the wait
  /// until the next step counts.
  void step(clock::time_point start, clock::time_point end, bool goes_on);
  /// The batch emptied: the wait until the next step does not count.
  void pause() { last_end_.reset(); }
  double fraction() const;

private:
  std::optional<clock::time_point> last_end_;
  double idle_ = 0, busy_ = 0;
};

/// Asynchronous scheduling of a decode rank (DESIGN §5.3; seeds: "Asynchronous Scheduling",
/// schedule(N+1) while forward(N)): a compute thread runs the batch's steps back to back while
/// its owner (the rank actor, on its own thread) streams step N-1's tokens. The tokens a step
/// feeds are the engine's own (each sequence's last one), so step N+1 needs nothing from the
/// owner's post-processing of step N: the loop starts it as soon as N ends, over the batch minus
/// what N finished.
///
/// The engine is single-threaded from the caller's side: the owner's engine calls (imports,
/// frees, block exports, handoffs) and its batch edits happen between `acquire` and `release`,
/// while no step runs. A step the owner has not taken the results of yet may run past a stop
/// string the owner's request cuts: its extra token is never streamed (the sequence is dropped
/// with the cancel, as without the loop). At most `max_ahead` steps' results wait untaken: a
/// slow owner holds the loop back rather than letting it compute tokens nobody reads.
///
/// Every output equals the synchronous rank's: steps are batch-invariant (a row's result does
/// not depend on the other rows), so which step a sequence joins changes no bit.
class decode_loop {
public:
  /// One sequence of the batch: the owner's request id and the engine's sequence.
  struct member {
    uint64_t id = 0;
    sequence_id seq;
  };
  /// The blocks a step filled of one sequence (`options::export_filled_blocks`): blocks
  /// [first, first + blocks.size()) of its KV, exported on the loop's thread, and its tokens then.
  /// For a sequence the step finished (`options::release_finished`): its last SWA snapshot too,
  /// and `released`: the loop has freed it.
  struct filled_blocks {
    int64_t first = 0;
    std::vector<std::vector<std::byte>> blocks;
    std::vector<int32_t> tokens;
    std::optional<int64_t> snapshot_end;
    std::vector<std::byte> snapshot;
    bool released = false;
  };
  /// What one step did, for the owner.
  struct step_result {
    /// The step's members, in the order of `outs` (and of `filled`, when exported).
    std::vector<uint64_t> ids;
    std::vector<verify_output> outs;
    std::vector<filled_blocks> filled;
    /// The step's end (`hooks::end_step`) failed: the loop runs no more steps.
    bool failed = false;
  };
  struct hooks {
    /// Runs on the loop's thread after each step, the engine still the loop's: ends the step of
    /// the rank's expert-parallel group that the step's forwards took part in, or, without
    /// forwards, the step `wake` names when the rank has not ended it yet (0: no wake since the
    /// last call). Null: no group. False: the group failed.
    std::function<bool(int64_t wake)> end_step;
    /// Runs on the loop's thread when a step's results wait and none waited before: the owner
    /// `take`s them on its own thread.
    std::function<void()> ready;
  };

  struct options {
    /// Most steps whose results wait untaken (>= 1).
    int max_ahead = 2;
    /// Each step exports the blocks it filled (`step_result::filled`): the owner stores them
    /// without taking the engine, so a block filling is no wait for the compute thread.
    bool export_filled_blocks = false;
    /// A sequence a step finishes is exported (its snapshot, and its last blocks when
    /// export_filled_blocks) and freed on the loop's thread: the owner stores what is left
    /// without taking the engine.
    bool release_finished = false;
  };

  /// Starts the loop's thread; the engine must outlive it. `planner` null: one token per step.
  decode_loop(rank_engine& engine, std::unique_ptr<spec_planner> planner, hooks h, options opt);
  decode_loop(rank_engine& engine, std::unique_ptr<spec_planner> planner, hooks h, int max_ahead = 2)
    : decode_loop(engine, std::move(planner), std::move(h), options{max_ahead, false, false}) {}
  /// Stops and joins the thread (after the running step, if any).
  ~decode_loop();
  decode_loop(const decode_loop&) = delete;
  decode_loop& operator=(const decode_loop&) = delete;

  /// Waits for the running step (if any) to end, then keeps the loop from starting another until
  /// `release`. Not reentrant (the owner counts its own nesting).
  void acquire();
  void release();
  /// Replaces the batch: the next step runs over these (precondition: acquired). A member the
  /// engine has finished or does not know gets a non-ok output and leaves the batch.
  void set_batch(std::vector<member> batch);
  /// The results of the steps that ended since the last call, oldest first.
  std::vector<step_result> take();
  /// The owner stored (or queued) blocks [0, stored) of member `seq`, and no more: a block a
  /// full write queue refused stays unstored. When a step finishes `seq` and the loop frees it
  /// (`options::release_finished`), its export starts there instead of at the step's first
  /// filled block, so the owner can still store what was refused (any thread; kept while `seq`
  /// is in the batch).
  void note_stored(sequence_id seq, int64_t stored);
  /// Another rank of the group started step `step` (any thread): the loop takes part, with its
  /// batch's next step or, when it has none to run (an empty batch, or `max_ahead` results
  /// untaken), with a step without forwards, so the group never waits for this rank's owner.
  void wake(int64_t step);

  /// The share of time the compute thread waited between two steps of a running batch (for the
  /// owner's `acquire`, or with `max_ahead` results untaken), exponentially weighted over about
  /// the last 20 steps.
  double idle_fraction() const;
  /// Steps run, and how many of them started before the previous step's results were taken
  /// (the overlap the loop exists for).
  uint64_t steps() const;
  uint64_t overlapped_steps() const;
  /// KV pool blocks in use after the last step (and the frees it made), for the owner's gauge
  /// while the loop may be stepping.
  int64_t pool_blocks_used() const;

private:
  void run();
  /// After a step over `seqs`: the blocks it filled (full blocks before it: `full_before`) and
  /// the sequences it ended, exported (and those freed) as the options say.
  void export_after_step(std::span<const sequence_id> seqs, const std::vector<int64_t>& full_before, step_result& r);
  /// Hands `r` to the owner (`ready` when none waited); `lock` is held on entry and on return.
  void publish(std::unique_lock<std::mutex>& lock, step_result r);

  rank_engine& engine_;
  std::unique_ptr<spec_planner> planner_;
  hooks hooks_;
  const int max_ahead_;
  const bool export_filled_;
  const bool release_finished_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<sequence_id, int64_t> stored_;  // note_stored, for members of the batch
  bool stop_ = false;
  bool failed_ = false;
  bool stepping_ = false;   // a step runs (the engine is the loop's)
  bool held_ = false;       // the owner holds the engine
  int wanted_ = 0;          // owners waiting in acquire: they go before the next step
  bool notified_ = false;   // `ready` was called and the owner has not taken since
  int64_t wake_ = 0;        // the latest step another rank started and woke this one for
  std::vector<member> batch_;
  std::vector<step_result> results_;
  uint64_t steps_ = 0, overlapped_ = 0;
  int64_t pool_used_ = 0;
  idle_meter idle_;
  std::thread thread_;
};

} // namespace deepinfer::engine
