#pragma once

// Internal to the rank actor: its prefill side. Jobs queue FIFO; the block fetcher plans each
// job's hit (CHECK, SWA window) and then reads its cached blocks into host memory on its own
// thread. A planned job enters the engine's chunk scheduler at once and runs its encoder (which
// needs the window, not the blocks) while its blocks load; they are imported into the pool when
// they arrive and only the decoder waits for them. Jobs advance one budgeted step per `chunk`
// self-message, so new jobs, cancels and pings are handled between steps.

#include <cstdint>

#include <caf/actor_addr.hpp>

#include "actors/instance/rank_state.hpp"

namespace deepinfer::actors {

/// Takes a prefill job; `promise` gets the first token (or the error).
void start_prefill(rank_pointer self, prefill_job& job,
                   caf::typed_response_promise<prefill_result> promise);

/// The block fetcher knows job `id`'s hit (length, SWA window): the job can enter the scheduler
/// and run its encoder while the blocks load.
void on_hit_planned(rank_pointer self, uint64_t id);

/// The block fetcher has job `id`'s blocks in host memory.
void on_blocks_loaded(rank_pointer self, uint64_t id);

/// rank_handoff.cpp: hands job `t`'s prefilled sequence to its decode rank `decode` over the
/// transport that fits the pair and frees it here. The first token (`t.out`) is answered first:
/// TTFT does not wait for the export (tens of ms at 30K). A failure from then on reaches the
/// request as a token batch error (one per sequence that was to go on).
void hand_off(rank_pointer self, prefill_task& t, const caf::actor& decode);

/// One budgeted prefill step over the scheduler's jobs; re-arms itself while any remain.
void prefill_chunk(rank_pointer self);

/// Drops prefill job `id` wherever it is (answering `why` as its error) and frees its pool
/// blocks. False when no such job is here.
bool cancel_prefill(rank_pointer self, uint64_t id, const std::string& why);

/// Drops the prefill jobs whose requester (`sink`) is `gone`.
void drop_prefills_of(rank_pointer self, const caf::actor_addr& gone);


} // namespace deepinfer::actors
