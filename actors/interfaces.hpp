#pragma once

// One typed_actor alias per role, each with what it accepts and replies (STYLE §4).

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/messages.hpp"

namespace deepinfer::actors {

/// A rank: one GPU, or one CPU worker thread in the CPU backend; runs the step loop.
/// - `(ping) -> rank_status`: liveness and identity.
/// - `(fail, std::string)`: fault injection; the rank fails with that reason (as a crash would).
/// - `(echo, byte_payload) -> byte_payload`: returns the payload (transport benchmarks).
/// - `(sink, byte_payload) -> uint64_t`: takes a payload, answers its size (KV push path).
/// - `(prefill, prefill_job) -> prefill_result`: prefills a prompt and hands its KV to the job's
///   decode rank over the KV transport (it is freed here); needs a rank with an engine. Jobs
///   queue (FIFO) and run in budgeted chunks, so a short prompt need not wait for a long one;
///   the answer (the first token) leaves before the KV is exported.
/// - `(decode, kv_handoff, engine::sampling_params, strong_actor_ptr sink)`: imports the sequence into the
///   continuous batch; `(tokens, token_batch)` messages go to `sink` until finished. The rank
///   monitors `sink`: when it goes away its sequences are dropped.
/// - `(cancel, uint64_t id)`: drops a prefill job (queued or mid-prefill; it is answered with an
///   error) or a decoding sequence (also one not arrived yet) and frees its KV. A prefill job
///   whose `sink` goes away is dropped the same way.
/// - `(step)`: internal, the decode loop's self-message.
/// - `(chunk)`: internal, the prefill loop's self-message (one budgeted step).
/// - `(loaded, uint64_t id)`: internal, job `id`'s blocks are in host memory.
/// - `(encode, vision_job) -> vision_result`: a vision rank's work (issue 21): the image's
///   placeholder embeddings from the model's vision encoder (an error without one), encoded on
///   the rank's encoder thread.
/// - `(encode, uint64_t key, vision_result)`: internal, the encoder thread's answer to image `key`.
/// - `(drain, int64_t grace_ms) -> uint64_t`: the drain notice (issue 17; decode ranks): decode on
///   for `grace_ms`, then offer every sequence for a handoff by sending `(move, uint64_t id)` to
///   its sink; answered once the rank holds no sequence, with how many it handed off.
/// - `(move, uint64_t id, rank_grant)`: the sink's answer to a move offer: hand sequence `id`
///   (KV, sampler and stop state: the exported sequence and its sampling_params) to the grant's
///   rank over a KV transport, then tell the sink `(move, uint64_t id, caf::error)` (none: the KV
///   left). A null handle: keep decoding it here (no other rank has room); offered again later.
/// - `(drain)`: internal, the drain's timer (end of the grace period, retries).
using rank_actor = caf::typed_actor<
  caf::replies_to<caf::ping_atom>::with<rank_status>,
  caf::reacts_to<fail_atom, std::string>,
  caf::replies_to<echo_atom, byte_payload>::with<byte_payload>,
  caf::replies_to<sink_atom, byte_payload>::with<uint64_t>,
  caf::replies_to<prefill_atom, prefill_job>::with<prefill_result>,
  caf::reacts_to<decode_atom, kv_handoff, engine::sampling_params, caf::strong_actor_ptr>,
  caf::reacts_to<cancel_atom, uint64_t>,
  caf::reacts_to<step_atom>,
  caf::reacts_to<chunk_atom>,
  caf::reacts_to<planned_atom, uint64_t>,
  caf::reacts_to<loaded_atom, uint64_t>,
  caf::reacts_to<ep_wake_atom, int64_t>,
  caf::reacts_to<ep_serve_atom, uint64_t>,
  caf::replies_to<encode_atom, vision_job>::with<vision_result>,
  caf::reacts_to<encode_atom, uint64_t, vision_result>,
  caf::replies_to<drain_atom, int64_t>::with<uint64_t>,
  caf::reacts_to<move_atom, uint64_t, rank_grant>,
  caf::reacts_to<drain_atom>>;

/// Owns the N ranks of one prefill or decode instance. Any rank failure fails the instance; it
/// restarts with its healthy ranks (EP = healthy ranks) and reports to its node agent.
/// - `(status) -> instance_status`
/// - `(get, uint32_t rank) -> rank_actor handle wrapped as strong_actor_ptr` (null when absent)
/// - `(fail, uint32_t rank, std::string)`: fault injection into one rank; it stays out of the
///   instance (the next generations are smaller).
/// - `(fail, uint32_t rank, std::string, int64_t down_ms)`: the same, but the rank is healthy again
///   after `down_ms`: then the instance grows back to its configured size (`POST /admin/fail-rank`).
/// - `(ep) -> ep_report`: the expert-parallel group (size, generation, placement, moe_lb).
/// - `(drain, int64_t grace_ms) -> uint64_t`: a decode instance's drain notice (SIGTERM to its
///   node, `POST /admin/drain`; issue 17): it reports itself `draining` (routers pass it over) and
///   tells every rank (`grace_ms` < 0: the instance's configured grace); answered once every rank
///   holds no sequence, with how many were handed off. A prefill instance drains too (routers pass
///   it over, its ranks finish what they hold; the grace is not used); vision: an error.
/// - `(grow)`: internal, a rank's down time ended.
/// - `(restart)`: internal, sent to itself to start the next generation (with the ranks available then).
using instance_supervisor_actor = caf::typed_actor<
  caf::replies_to<status_atom>::with<instance_status>,
  caf::replies_to<caf::get_atom, uint32_t>::with<caf::strong_actor_ptr>,
  caf::reacts_to<fail_atom, uint32_t, std::string>,
  caf::reacts_to<fail_atom, uint32_t, std::string, int64_t>,
  caf::replies_to<ep_atom>::with<ep_report>,
  caf::reacts_to<restart_atom>,
  caf::reacts_to<grow_atom>,
  caf::replies_to<drain_atom, int64_t>::with<uint64_t>>;

/// One per process: registers with the controller, owns the node's role actors, relays instance
/// reports, keeps the latest membership view for local readers (HTTP /metrics).
/// - `(ctl_up, strong_actor_ptr)`: the bootstrap thread connected to the controller.
/// - `(report, instance_status)`: from a local instance supervisor.
/// - `(view, membership_view)`: pushed by the controller on every change.
/// - `(status) -> node_info`
/// - `(echo, byte_payload) -> byte_payload`: returns the payload (transport benchmarks).
/// - `(assign, pool_assignment) -> std::string`: a ready-pool node becomes an instance of the
///   role (its ranks load the model); the instance's name, or an error (not a pool node, the
///   role is not one it may take, it already serves one).
/// - `(unassign, pool_assignment) -> uint64_t`: that instance drains (grace_ms) and stops; the
///   node is back in the pool. The requests handed off.
using node_agent_actor = caf::typed_actor<
  caf::reacts_to<ctl_up_atom, caf::strong_actor_ptr>,
  caf::reacts_to<report_atom, instance_status>,
  caf::reacts_to<view_atom, membership_view>,
  caf::replies_to<status_atom>::with<node_info>,
  caf::replies_to<echo_atom, byte_payload>::with<byte_payload>,
  caf::replies_to<assign_atom, pool_assignment>::with<std::string>,
  caf::replies_to<unassign_atom, pool_assignment>::with<uint64_t>>;

/// One shard of the SWA directory (DESIGN §4.2), on an entrypoint: which node's memory holds the
/// snapshot ending at a block key. Owners are monitored; a dead owner's entries go.
/// - `(swa_record, kv::block_key, strong_actor_ptr owner)`: `owner` (a snapshot server) now holds it.
/// - `(swa_lookup, kv::block_key) -> strong_actor_ptr`: the owner, or null.
using swa_shard_actor = caf::typed_actor<
  caf::reacts_to<swa_record_atom, kv::block_key, caf::strong_actor_ptr>,
  caf::replies_to<swa_lookup_atom, kv::block_key>::with<caf::strong_actor_ptr>>;

/// Serves the SWA snapshots of its node's memory to prefill ranks on other nodes.
/// - `(swa_fetch, kv::block_key) -> byte_payload`: the snapshot's bytes (empty when gone).
using snapshot_server_actor = caf::typed_actor<
  caf::replies_to<swa_fetch_atom, kv::block_key>::with<byte_payload>>;

/// The cluster's prefill balancer (DESIGN §6.1), one for every entrypoint, on the controller's
/// node. Holds the bucketed queue that prefill instances pull from by remaining compute-quota.
/// - `(place, prefill_ask) -> rank_grant`: answered when an instance pulls the job (the lowest
///   quota rank of it); an error `no_capacity` when no prefill instance runs.
/// - `(release, uint64_t key)`: the prefill is answered, failed or abandoned (or never ran).
/// - `(view, membership_view)`: from the controller on every change.
/// - `(round)`: internal, the round timer (buckets re-divided by last round's demand).
using prefill_balancer_actor = caf::typed_actor<
  caf::replies_to<place_atom, prefill_ask>::with<rank_grant>,
  caf::reacts_to<release_atom, uint64_t>,
  caf::reacts_to<view_atom, membership_view>,
  caf::reacts_to<round_atom>>;

/// The cluster's decode balancer (DESIGN §6.2) over every rank of every decode instance, each
/// sized by its KV pool; on the controller's node.
/// - `(place, decode_claim) -> rank_grant`: a rank with room for `kv_tokens`, or an error
///   `no_capacity` (every rank full, or none runs: the request waits and asks again).
/// - `(grow, decode_claim)`: the request's KV is `kv_tokens` long now, on the claim's rank; a
///   balancer that does not know the claim (it restarted) takes it in: its state is soft.
/// - `(release, uint64_t key)`: the request finished, failed or moved.
/// - `(view, membership_view)`: from the controller on every change.
using decode_balancer_actor = caf::typed_actor<
  caf::replies_to<place_atom, decode_claim>::with<rank_grant>,
  caf::reacts_to<grow_atom, decode_claim>,
  caf::reacts_to<release_atom, uint64_t>,
  caf::reacts_to<view_atom, membership_view>>;

/// The controller: membership (monitors every node agent), instance states; it spawns, monitors and
/// restarts the two balancers and names them in the view.
/// - `(register, node_info, strong_actor_ptr agent) -> membership_view`: a node joins (again).
/// - `(leave, std::string node) -> ok`: a node shuts down cleanly.
/// - `(report, instance_status)`: an instance changed state.
/// - `(get, view) -> membership_view`
/// - `(scale)`: internal, the autoscaler's interval timer (issue 17, DESIGN §6.5): one decision,
///   then ready-pool nodes assigned or given back.
using controller_actor = caf::typed_actor<
  caf::replies_to<register_atom, node_info, caf::strong_actor_ptr>::with<membership_view>,
  caf::replies_to<caf::leave_atom, std::string>::with<caf::ok_atom>,
  caf::reacts_to<report_atom, instance_status>,
  caf::replies_to<caf::get_atom, view_atom>::with<membership_view>,
  caf::reacts_to<scale_atom>>;

/// A node's structured-output compiler (issue 19, DESIGN §5.3), on its own thread: compiles run
/// there, never on an entrypoint's request actor or a rank's step loop.
/// - `(compile, std::string spec) -> so_compiled`: compiles the constraint of an engine spec
///   (`structured_output::spec_of`) into the node's cache, where its ranks find it; the error
///   (`errc::so_refused`) when it cannot be enforced.
using so_compiler_actor = caf::typed_actor<caf::replies_to<compile_atom, std::string>::with<so_compiled>>;

} // namespace deepinfer::actors
