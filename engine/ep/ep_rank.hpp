#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/backends/backend.hpp"
#include "engine/ep/ep_load_window.hpp"
#include "engine/ep/ep_step_signal.hpp"
#include "engine/ep/ep_transport.hpp"
#include "engine/ep/expert_placement.hpp"
#include "engine/ep/expert_slots.hpp"
#include "engine/ep/replica_mover.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/routed_experts.hpp"

namespace deepinfer::engine {

class model_weights;

/// Settings of an expert-parallel group (DESIGN §6.4), the same on every rank.
struct ep_settings {
  /// Redundant slots per rank (prefill 4, decode 1); total slots rounded up to a multiple of EP.
  int redundant_per_rank = 1;
  /// N: steps of load history re-placement and moe_lb look at.
  int window = 1000;
  /// M: steps between re-placements; 0: only when asked (`request_replacement`).
  int interval = 10000;

  /// The decode instances' values: 1 redundant slot per rank, N = 1000, M = 10000.
  static ep_settings decode() { return {1, 1000, 10000}; }
  /// The prefill instances' values: 4 redundant slots per rank, N = 100, M = 1000.
  static ep_settings prefill() { return {4, 100, 1000}; }
};

/// What one step of the group did, as every rank sees it (the same on every rank).
struct ep_step_stats {
  /// Steps the group has ended, this one included.
  int64_t step = 0;
  /// Seconds this step's MoE rounds spent in the exchange (all-to-alls, waiting for the others
  /// included): mean over ranks, and the least of any rank (the one that waited least).
  double exchange_seconds = 0.0;
  double min_exchange_seconds = 0.0;
  /// The part of exchange_seconds spent waiting for the other ranks (their compute and
  /// scheduling; `ep_transport::arrival_wait_seconds`), mean over ranks; the rest moved data.
  double arrival_wait_seconds = 0.0;
  /// Routed-token rows computed by each rank's slots in this step (all MoE layers).
  std::vector<int64_t> rank_rows;
  /// moe_lb over the window after this step (`ep_load_window::moe_lb`).
  double moe_lb = 1.0;
  /// True when experts were re-placed after this step; `moves` slot buffers got new weights.
  bool replaced = false;
  int moves = 0;
  /// True when the group failed during the step (a rank died: `ep_group::fail`): the step's
  /// forwards produced garbage and must not be used, and the group computes nothing any more
  /// (its instance restarts with the healthy ranks, DESIGN §3). The other fields are not set.
  bool failed = false;
};

/// One rank of an expert-parallel group (an instance's N ranks are one group): holds its slots'
/// routed experts and runs every MoE layer of its engine's forwards as a collective with the
/// other ranks (DESIGN §5.4). Made by `ep_group`; its engine joins it (`rank_engine::join_ep_group`).
///
/// The step protocol: a step is whatever forwards the engine runs (prefill chunks, a decode
/// batch, nothing) followed by `end_step()`. Every MoE layer is one round: each rank routes its
/// rows, sends each (row, expert) to one slot holding that expert (round robin over the
/// replicas), computes the rows it received, sends the outputs back and combines them in
/// ascending expert order. A rank that has ended its step keeps joining rounds with no rows
/// (serving its slots) until every rank has ended it, so ranks may run different numbers of
/// layers in a step and a rank without requests still takes part. Then every rank applies the
/// same decisions from the same counts: the load window, moe_lb, and every `interval` steps (or
/// when any rank asked) the re-placement, whose replica moves happen before `end_step` returns:
/// between two steps, so no forward sees a half-moved expert.
///
/// Rounds pair up by their order, not by layer (each rank's rows carry their own layer), which
/// lets a short forward avoid being paced by a long one beside it: a rank woken for a step
/// serves it a round at a time (`serve_round`) and may start a forward of its own between two
/// rounds, joining the step; and a rank in the middle of a long forward takes part in a round
/// early, between two pieces of its work, when the others wait on its experts
/// (`serve_waiting`). Neither changes a bit: every row meets the same experts in the same order.
///
/// One thread uses a rank: the thread that runs its engine.
class ep_rank final : public routed_experts {
public:
  /// Rank `transport.rank()` of a group for `model` starting from `placement` (identical on
  /// every rank). `transport`, `mover` and `signal` (optional) must outlive the rank.
  ep_rank(const model_config& model, const ep_settings& settings, expert_placement placement,
          ep_transport& transport, replica_mover& mover, ep_step_signal* signal = nullptr);
  ~ep_rank() override;
  ep_rank(const ep_rank&) = delete;
  ep_rank& operator=(const ep_rank&) = delete;

  int rank() const { return transport_.rank(); }
  int ranks() const { return transport_.ranks(); }

  /// Loads this rank's slots from `w` (the engine's weights) and prepares them on `b`, which
  /// then computes the rows sent to them. Precondition: `b` outlives the binding (`unbind`, or
  /// this rank's destruction, releases them from it).
  void bind(const model_weights& w, backend& b, std::function<void()> on_unbind = {});
  /// Releases the slots from the backend and calls the `on_unbind` given to `bind` (nothing
  /// when unbound). The destructor unbinds.
  void unbind();

  /// One MoE layer's routed experts over this rank's rows, as a round of the group.
  void run(int layer, const float* xn, int64_t n, std::span<const expert_route> routes, int top,
           float* out) override;

  /// Ends this rank's step (see the class comment); returns once the whole group has ended it.
  /// Required after every step, also one without forwards.
  ep_step_stats end_step();

  /// One round of a step this rank takes part in without rows of its own (an idle rank woken
  /// for a step another started), so that its owner can do other work between two rounds:
  /// true once the step's rounds are over (every rank has ended it; `end_step` then finishes
  /// the step without another round). Between two calls the owner may run forwards: their
  /// rounds join the step's remaining ones (a round carries each rank's layer), so work that
  /// arrives while the others compute starts in their step instead of after it.
  bool serve_round();

  /// True when this rank's own rows took part in a round of the current step (`run`).
  bool forwarded_in_step() const { return forwarded_; }

  /// Between two pieces of this rank's forward: when the other ranks wait in the next round
  /// and one of them has rows there (`ep_transport::peers_wait_with_rows`), takes part in that
  /// round now without rows of its own (not done: the forward goes on).
  void serve_waiting() override;
  /// Whether serve_waiting would take part in a round now (not a collective).
  bool others_wait_with_rows() const { return transport_.peers_wait_with_rows(); }

  /// True once the group has failed (see `ep_step_stats::failed`); readable from any thread.
  bool failed() const { return failed_.load(); }

  /// Steps this rank has ended (readable from any thread).
  int64_t steps() const { return steps_.load(); }

  /// Sets what is called, from another rank's thread, when a step starts that this rank has not
  /// started: `step` is the number it will have (`steps()` + 1 then). The rank's owner must run a
  /// step (possibly without forwards) and end it; a wake with `step <= steps()` is stale (the
  /// owner started that step by itself). Optional: without one, the owner steps on its own.
  /// A step the others started before the wake was set is woken for at once (from this thread),
  /// so a rank that joins late (still loading while another rank took a request) is not missed.
  void set_wake(std::function<void(int64_t step)> wake);

  /// True between this rank's first MoE round of a step and its `end_step` (owner's thread).
  bool in_step() const { return in_step_; }

  /// Asks for a re-placement after the current step (any rank may ask; the group agrees).
  void request_replacement() { replace_requested_.store(true); }

  const ep_settings& settings() const { return settings_; }
  const expert_placement& placement() const { return placement_; }
  const ep_load_window& window() const { return window_; }
  /// The window's routed tokens per expert, per layer (for an elastic rebuild's first placement).
  std::vector<std::vector<double>> expert_loads() const;
  /// Tokens this rank's rows routed to each expert since it was made, [layer * experts + e].
  std::span<const int64_t> routed_tokens() const { return routed_total_; }
  /// Bytes of this rank's routed-expert slot buffers.
  std::size_t routed_expert_bytes() const { return slots_.bytes(); }
  /// Re-placements so far, and slot buffers moved by them.
  int64_t replacements() const { return replacements_; }
  /// Rounds this rank joined from inside its forwards for others' waiting rows (serve_waiting).
  int64_t served_early() const { return served_early_; }
  int64_t moved_slots() const { return moved_slots_; }

private:
  bool round(int layer, const float* xn, int64_t n, std::span<const expert_route> routes, int top,
             float* out, bool done);
  void compute_received();
  int apply(const expert_placement& next);
  void begin_step();
  /// False (and failed() from then on) when the group failed.
  bool timed_all_to_all(const std::vector<ep_buffer>& send, std::vector<ep_buffer>& recv);

  model_config model_;
  ep_settings settings_;
  expert_placement placement_;
  ep_transport& transport_;
  replica_mover& mover_;
  ep_step_signal* signal_;
  expert_slots slots_;
  ep_load_window window_;
  backend* backend_ = nullptr;
  std::function<void()> on_unbind_;
  int layers_, experts_;
  int64_t hidden_, ffn_;

  // per round
  std::vector<ep_buffer> send_, recv_, reply_, result_;
  /// Where each (row, route) of this rank's call went: destination rank and row index there.
  std::vector<std::pair<int32_t, int32_t>> where_;
  /// The received rows of each (layer, slot), as (source, index), and which keys are in use.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> by_slot_;
  std::vector<int32_t> used_slots_;
  std::vector<float> xe_, g_, u_, o_;
  /// The gated MLPs of `compute_received`'s call, one per used slot.
  std::vector<backend::expert_mlp> mlps_;
  std::vector<uint64_t> next_replica_; // round-robin position per (layer, expert)

  // per step
  std::vector<int64_t> routed_step_, served_step_;
  double exchange_seconds_ = 0.0;
  double wait_mark_ = 0.0; // the transport's arrival wait at the start of the step
  std::atomic<int64_t> steps_{0};
  bool in_step_ = false;
  bool forwarded_ = false;   // this step ran rows of this rank's own
  bool rounds_over_ = false; // this step's last round has been (every rank was done in it)
  std::atomic<bool> failed_{false};
  std::vector<int64_t> routed_total_;
  int64_t replacements_ = 0, moved_slots_ = 0, served_early_ = 0;
  std::atomic<bool> replace_requested_{false};
};

} // namespace deepinfer::engine
