#pragma once

// Internal to the rank actor (rank.cpp: decode and the behavior; rank_prefill.cpp: the prefill
// queue): its state, shared by both files.

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/errors.hpp"
#include "actors/instance/block_fetcher.hpp"
#include "actors/instance/busy_log.hpp"
#include "actors/node/lowered_thread.hpp"
#include "actors/instance/ep_generation.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/interfaces.hpp"
#include "kv/prefix_cache.hpp"
#include "actors/instance/rank.hpp"
#include "engine/decode_drain.hpp"
#include "engine/decode_loop.hpp"
#include "engine/prefill_scheduler.hpp"
#include "engine/rank_engine.hpp"
#include "engine/spec_planner.hpp"

namespace deepinfer::actors {

/// The `errc` of an engine call that did not do what was asked (`status` is not ok).
inline errc errc_of(engine::engine_status status) {
  switch (status) {
    case engine::engine_status::does_not_fit: return errc::engine_out_of_kv;
    case engine::engine_status::invalid_request: return errc::engine_invalid_request;
    case engine::engine_status::bad_kv: return errc::engine_import_failed;
    default: return errc::engine_step_failed;
  }
}

/// One sequence in the decode batch.
struct decoding {
  engine::sequence_id seq;
  caf::actor sink;
  /// Bytes of the handoff, reported with the first batch.
  uint64_t kv_bytes = 0;
  /// Its prefix-cache namespace: its blocks are stored under it.
  kv::cache_salt salt;
  /// The traffic class its blocks are stored with (their TTL).
  kv::traffic_class traffic = kv::traffic_class::chatbot;
  /// Logprobs asked for: the alternatives per token (0: the sampled token's only); -1: none.
  int32_t logprobs_top = -1;
  /// Its images' marks: its blocks are keyed with them when stored.
  std::vector<kv::image_mark> images;
  /// Its sampling settings as the decode message brought them: they travel on with a handoff
  /// (seed, penalties, stop ids, max_tokens; the position is the sequence's own length).
  engine::sampling_params sampling;
  /// Offered for a handoff (drain): left out of the batch until its sink answers.
  bool moving = false;
  /// Its blocks [0, stored_blocks) are stored or queued for writing (issue 17: the prompt's when
  /// its KV arrived, each output block as it filled).
  int64_t stored_blocks = 0;
  /// Its tokens, as counted from its import and its steps: when they fill another block, the
  /// block is queued (the engine's own count decides what is full).
  int64_t length = 0;
};

/// What the block fetcher brings back for one job: the plan and remote-window flag (written on
/// its thread before `planned`), then the blocks (before `loaded`).
struct fetched_blocks {
  kv::prefix_cache::hit_plan plan;
  bool snapshot_remote = false;
  std::vector<std::vector<std::byte>> blocks;
  /// Set (under `m`, then `cv` notified) once `plan` is: the rank may take it without waiting
  /// for the fetcher's message (start_prefill).
  std::mutex m;
  std::condition_variable cv;
  bool planned = false;
  /// The rank has taken the plan (the rank's thread only): the message finds it done.
  bool plan_taken = false;
};

/// One prefill job on its way through the rank: fetching its blocks, waiting for pool room,
/// then in the chunk scheduler (`seq` set).
struct prefill_task {
  prefill_job job;
  caf::typed_response_promise<prefill_result> promise;
  prefill_result out;
  engine::prefill_request req;
  /// Set while the block fetcher works on it.
  std::shared_ptr<fetched_blocks> fetching;
  /// In the scheduler (begin_prefill done: its pool blocks are held).
  bool running = false;
  /// Cancelled while its blocks were being fetched: goes when the fetch reports.
  bool dropped = false;
  /// When the job arrived, and when the first step that holds it began (unset until then): its
  /// answer's queue_seconds and step_seconds.
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> stepped;
};

/// Fails the rank's EP generation when the rank's state goes (it stopped, for any reason), before
/// its engine goes: the other ranks' collectives return instead of waiting for this one forever.
struct ep_fail_on_exit {
  std::shared_ptr<ep_generation> ep;
  ep_fail_on_exit() = default;
  ep_fail_on_exit(const ep_fail_on_exit&) = delete;
  ep_fail_on_exit& operator=(const ep_fail_on_exit&) = delete;
  ~ep_fail_on_exit();
};

/// The rank actor's state.
struct rank_state {
  /// Holds the EP generation (`cfg.ep`): declared before the engine, so the group outlives it.
  rank_config cfg;
  uint64_t steps = 0;
  std::unique_ptr<engine::rank_engine> engine;
  /// Asynchronous scheduling (issue 18, `rank_engine_config::async_scheduling`): the compute
  /// thread that steps the decode batch while this thread streams (null: this thread steps it,
  /// synchronously). Declared after the engine and before the EP guard: it is joined after the
  /// group fails (a step waiting in a collective returns) and before the engine goes.
  std::unique_ptr<engine::decode_loop> loop;
  /// Nesting of `hold_engine` on the rank's thread; the steps' results not delivered yet.
  int holds = 0;
  std::deque<engine::decode_loop::step_result> undelivered;
  /// Declared after the engine: fails the group before the engine leaves it.
  ep_fail_on_exit ep_guard;
  /// The engine's member of `cfg.ep`'s group (null without EP).
  engine::ep_rank* member = nullptr;
  /// Taking part in a step another rank started, one round per message (on_ep_serve), and the
  /// chain of those messages that is current (a chain whose step ended otherwise stops).
  bool ep_serving = false;
  uint64_t ep_serve_chain = 0;
  /// Rank 0's EP figures (null on other ranks and without a registry).
  http::metrics_registry::gauge* moe_lb_gauge = nullptr;
  http::metrics_registry::counter* replacements_counter = nullptr;
  http::metrics_registry::histogram* exchange_histogram = nullptr;
  /// Request id -> decoding sequence; ordered so batches are deterministic.
  std::map<uint64_t, decoding> active;
  uint64_t next_seq = 1;
  bool stepping = false;
  /// Ids cancelled before their KV arrived.
  std::set<uint64_t> cancelled;
  /// Prefill side: job id -> task; fetched jobs waiting for pool room (FIFO); engine
  /// sequence -> job id of the jobs in the scheduler.
  std::map<uint64_t, prefill_task> prefills;
  /// When the rank's thread ran steps and job starts: what a job's wait overlapped
  /// (prefill_result::busy_seconds).
  busy_log busy;
  std::deque<uint64_t> admitting;
  std::map<uint64_t, uint64_t> running;
  std::unique_ptr<engine::prefill_scheduler> scheduler;
  bool chunking = false;
  /// Inside prefill_chunk (start_chunking then sends the chunk message instead of calling it).
  bool in_chunk = false;
  /// Declared after the engine and the tasks: destroyed (joined) first.
  std::unique_ptr<block_fetcher> fetcher;
  /// A vision rank's encoder thread (`rank_engine_config::encodes_images`); declared after the
  /// engine: joined before it goes. Its images' answers by local key, until they come back.
  std::unique_ptr<lowered_thread> encoder;
  std::map<uint64_t, caf::typed_response_promise<vision_result>> encoding;
  uint64_t next_encode = 1;
  /// Pool use, batch size and prefill queue gauges (null without a registry).
  http::metrics_registry::gauge* pool_used = nullptr;
  http::metrics_registry::gauge* active_gauge = nullptr;
  http::metrics_registry::gauge* queue_gauge = nullptr;
  /// Prefill ranks: prompt tokens computed (a hit's cached tokens not counted): which rank of
  /// which instance did the prefill work.
  http::metrics_registry::counter* prefilled_tokens = nullptr;
  /// Vision (issue 21): images this rank's encoder turned into placeholder embeddings, and the
  /// time each took.
  http::metrics_registry::counter* images_encoded = nullptr;
  http::metrics_registry::histogram* encode_seconds = nullptr;
  /// Speculative decoding (DESIGN §5.3): the drafts each step verifies, and vLLM's counters of
  /// them (null without a registry). Null planner: the rank decodes one token per step.
  std::unique_ptr<engine::spec_planner> planner;
  http::metrics_registry::counter* spec_drafts = nullptr;
  http::metrics_registry::counter* spec_draft_tokens = nullptr;
  http::metrics_registry::counter* spec_accepted = nullptr;
  std::array<http::metrics_registry::counter*, engine::max_draft_positions> spec_accepted_at{};
  /// deepinfer_decode_idle_fraction{rank}: time the compute threads waited between two decode
  /// steps of a running batch over step time, exponentially weighted over about the last 20
  /// steps: for this thread's streaming and scheduling (synchronous steps: `idle`), or for its
  /// hold on the engine (the loop measures itself).
  http::metrics_registry::gauge* idle_gauge = nullptr;
  engine::idle_meter idle;
  /// The drain (issue 17): set by the first drain notice; the supervisors waiting for its end,
  /// the sequences handed off so far, and whether its timer is armed.
  std::optional<engine::decode_drain> drain;
  std::vector<caf::typed_response_promise<uint64_t>> drained_promises;
  uint64_t handed_off = 0;
  bool drain_timer = false;
  /// Relays the drain's timer (rank_drain.cpp says why it is not a delayed message to the rank).
  caf::actor drain_relay;
  static inline const char* name = "deepinfer.rank";
};

using rank_pointer = rank_actor::stateful_pointer<rank_state>;

/// Publishes pool use, batch size and prefill queue length.
void report(rank_pointer self);

// -- decode steps (rank_decode.cpp) -------------------------------------------------------------

/// The engine is this thread's while one lives (the decode loop runs no step): every handler that
/// calls the engine or edits the batch holds it. Taking the first one delivers the steps the loop
/// finished meanwhile, so what the rank knows of its sequences is what the engine holds; the last
/// one gives the loop the batch as `active` has it. No-op without a loop.
class engine_hold {
public:
  engine_hold() = default;
  explicit engine_hold(rank_pointer self);
  engine_hold(engine_hold&& o) noexcept : self_(std::exchange(o.self_, nullptr)) {}
  engine_hold(const engine_hold&) = delete;
  engine_hold& operator=(const engine_hold&) = delete;
  engine_hold& operator=(engine_hold&&) = delete;
  ~engine_hold();

private:
  rank_pointer self_ = nullptr;
};
inline engine_hold hold_engine(rank_pointer self) { return engine_hold{self}; }
/// Starts the decode loop when the rank decodes asynchronously (after the engine joined its EP
/// group).
void start_decode_loop(rank_pointer self);
/// step_atom: the next synchronous step, or the loop's finished steps delivered.
void on_step(rank_pointer self);
/// Stores what is left of a sequence (its blocks not yet queued, its last window), then frees it.
void release(rank_pointer self, decoding& d);
/// Queues the full blocks of `d` not yet stored for writing (the prefix cache's writer thread
/// writes them; only their export runs here). No-op without a cache.
void store_filled(rank_pointer self, decoding& d);
/// After a store of `d`'s blocks up to `full`: tells the loop where its unstored blocks begin
/// when the write queue refused some (so they are exported before the loop frees it).
void note_unstored(rank_state& st, const decoding& d, int64_t full);

// -- images (rank_images.cpp) -------------------------------------------------------------------

/// The prefix-cache marks of a job's images (their positions and content keys).
std::vector<kv::image_mark> marks_of(const prefill_job& job);
/// An error when the job has images and the model no vision encoder, or an image does not match
/// its placeholders (the entrypoint counted them with the same model config).
caf::error check_images(engine::rank_engine& engine, const prefill_job& job);
/// Gives `req` the placeholder embeddings of the job's images that its encoder passes reach
/// (from `req.hit_length` on, less the replayed window without a snapshot; `check_images`
/// passed): a vision rank's, or encoded here, dropping the pixels. The ones the hit holds wholly
/// are neither encoded nor sent; they keep their pixels, and a restart without the hit (called
/// again) encodes them.
void attach_images(rank_state& st, engine::rank_engine& engine, prefill_job& job, engine::prefill_request& req);
/// A vision rank's image: checked here, then encoded on the rank's encoder thread; the promise
/// is answered when `finish_encode` gets the result (at once with an error when it cannot be).
caf::typed_response_promise<vision_result> start_encode(rank_pointer self, vision_job& job);
/// The encoder thread's answer to image `key`: counted, then delivered.
void finish_encode(rank_pointer self, uint64_t key, vision_result& r);

// -- drain and handoff (rank_drain.cpp) ---------------------------------------------------------

/// The drain notice: decode on for `grace`, then hand off; `promise` is answered when drained.
void begin_drain(rank_pointer self, std::chrono::milliseconds grace, caf::typed_response_promise<uint64_t> promise);
/// The drain's timer: offers what is due, answers the promises once drained, re-arms.
void on_drain_timer(rank_pointer self);
/// A sequence joined the batch (`id`): during the handoff it is offered at once.
void offer_if_handing_off(rank_pointer self, uint64_t id);
/// Sequence `id` left the batch (finished, cancelled, dropped): the drain may be complete.
void drain_forget(rank_pointer self, uint64_t id);
/// The sink's answer to a move offer (`interfaces.hpp`, `(move, id, rank_grant)`).
void on_move(rank_pointer self, uint64_t id, const rank_grant& to);
/// Starts the decode loop unless it runs.
void ensure_stepping(rank_pointer self);

// -- expert parallelism (rank_ep.cpp) ----------------------------------------------------------

/// Joins the engine to its generation's EP group (no-op without one). False: the group already
/// failed and the rank is quitting.
bool join_ep(rank_pointer self);
/// Ends the EP step the engine's forwards started (or, with `force`, an empty one: another rank
/// started it). False: the group failed during the step — its forwards are garbage, nothing may
/// be sent — and the rank is quitting. True without EP.
bool end_ep_step(rank_pointer self, bool force = false);
/// The decode loop's way to end the steps its forwards started (null without EP): as
/// end_ep_step, on the loop's thread; false when the group failed (the rank then quits).
std::function<bool(int64_t wake)> ep_step_ender(rank_pointer self);
/// Another rank started step `step`: take part unless this rank already did, serving the
/// step's rounds one message at a time (on_ep_serve), so a job that arrives meanwhile joins it.
void on_ep_wake(rank_pointer self, int64_t step);
/// The next round of the step this rank was woken for (chain `chain`); ends the step after its
/// last round.
void on_ep_serve(rank_pointer self, uint64_t chain);

/// rank_constraints.cpp: whether a request with `constraint` (an engine spec; empty: none) must
/// have it compiled on the node's compiler actor before it enters the engine (not in the cache
/// the engine masks with, and the rank has a compiler actor).
bool needs_compile(rank_pointer self, const std::string& constraint);

/// rank_constraints.cpp: asks the node's compiler actor for `constraint`, then calls `then` on
/// this rank with the error (none: compiled; `errc::so_refused`, or a timeout) (issue 19).
void compile_then(rank_pointer self, const std::string& constraint, std::function<void(caf::error)> then);

} // namespace deepinfer::actors
