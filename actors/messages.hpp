#pragma once

// Every typed message of DeepInfer-CAF: atoms, message structs with their `inspect`, and the one
// type-ID block. No logic here (STYLE §4). Adding a message means editing this file and
// interfaces.hpp, nothing else.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor_control_block.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

#include "actors/bulk_field.hpp"
#include "actors/names.hpp"
#include "balancers/cost_model.hpp"
#include "engine/sampler.hpp"
#include "kv/block_key.hpp"
#include "kv/hash_chain.hpp"
#include "kv/traffic_class.hpp"

// -- plain-library types that travel as they are -----------------------------------------------

namespace deepinfer::engine {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
  using deepinfer::actors::exact;
  return f(caf::meta::type_name("sampling_params"), exact(x.temperature), x.top_k, exact(x.top_p), exact(x.min_p), x.seed,
           x.stop_ids, x.max_tokens, x.logprobs, x.top_logprobs, x.constraint, x.output_from, exact(x.presence_penalty),
           exact(x.frequency_penalty), exact(x.repetition_penalty), x.min_tokens, x.logit_bias, x.allowed_ids, x.bad_words,
           x.prediction, x.thinking_budget, x.thinking_end, x.prompt_logprobs);
}

} // namespace deepinfer::engine

namespace deepinfer::kv {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, block_key& x) {
  return f(caf::meta::type_name("block_key"), x.lo, x.hi);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cache_salt& x) {
  return f(caf::meta::type_name("cache_salt"), x.value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, image_mark& x) {
  return f(caf::meta::type_name("image_mark"), x.position, x.tokens, x.content);
}

} // namespace deepinfer::kv

namespace deepinfer::actors {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, role_set& x) {
  return f(caf::meta::type_name("role_set"), x.bits);
}

// -- atoms (CAF 0.17: at most 10 characters) ---------------------------------------------------
// CAF's own get_atom, ping_atom, leave_atom, ok_atom are used where they fit.

using register_atom = caf::atom_constant<caf::atom("register")>;
using view_atom = caf::atom_constant<caf::atom("view")>;
using report_atom = caf::atom_constant<caf::atom("report")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using fail_atom = caf::atom_constant<caf::atom("fail")>;
using ctl_up_atom = caf::atom_constant<caf::atom("ctlup")>;
using echo_atom = caf::atom_constant<caf::atom("echo")>;
using restart_atom = caf::atom_constant<caf::atom("restart")>;
using sink_atom = caf::atom_constant<caf::atom("sink")>;
using prefill_atom = caf::atom_constant<caf::atom("prefill")>;
using decode_atom = caf::atom_constant<caf::atom("decode")>;
using tokens_atom = caf::atom_constant<caf::atom("tokens")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using chunk_atom = caf::atom_constant<caf::atom("chunk")>;
using loaded_atom = caf::atom_constant<caf::atom("loaded")>;
using planned_atom = caf::atom_constant<caf::atom("planned")>;
using swa_record_atom = caf::atom_constant<caf::atom("swarecord")>;
using swa_lookup_atom = caf::atom_constant<caf::atom("swalookup")>;
using swa_fetch_atom = caf::atom_constant<caf::atom("swafetch")>;
using admit_atom = caf::atom_constant<caf::atom("admit")>;
/// A request actor's image URLs are fetched (the results wait in its state).
using fetched_atom = caf::atom_constant<caf::atom("fetched")>;
using parsed_atom = caf::atom_constant<caf::atom("parsed")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
using place_atom = caf::atom_constant<caf::atom("place")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using grow_atom = caf::atom_constant<caf::atom("grow")>;
using round_atom = caf::atom_constant<caf::atom("round")>;
using ep_wake_atom = caf::atom_constant<caf::atom("epwake")>;
/// A rank woken for another rank's step serves its next round (rank_ep.cpp: on_ep_serve).
using ep_serve_atom = caf::atom_constant<caf::atom("epserve")>;
using encode_atom = caf::atom_constant<caf::atom("encode")>;
using ep_atom = caf::atom_constant<caf::atom("ep")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using move_atom = caf::atom_constant<caf::atom("move")>;
/// The controller's autoscaler makes a ready-pool node an instance, and gives it back (issue 17).
using assign_atom = caf::atom_constant<caf::atom("assign")>;
using unassign_atom = caf::atom_constant<caf::atom("unassign")>;
using scale_atom = caf::atom_constant<caf::atom("scale")>;
/// Compile a structured-output constraint (its engine spec) on a compiler actor (`so_compiler_actor`).
using compile_atom = caf::atom_constant<caf::atom("compile")>;

// -- cluster membership ------------------------------------------------------------------------

/// Who a node is: what the manifest says about it plus the process that runs it.
struct node_info {
  std::string name;
  std::string host;
  uint16_t port = 0;
  role_set roles;
  int32_t pid = 0;
  /// Distinguishes restarts of the same node name; chosen by the node at start (wall-clock ns).
  uint64_t incarnation = 0;
  /// This node's shard of the SWA directory (entrypoints only; DESIGN §4.2).
  caf::strong_actor_ptr swa_shard;
  /// Serves the SWA snapshots kept in this node's memory (serving nodes with a prefix cache).
  caf::strong_actor_ptr snapshots;
  /// `HOST:PORT` of this node's RDMA KV listener; empty when it has none (no device, or
  /// kv_transport = caf_message). A prefill rank uses RDMA only toward a node that advertises it.
  std::string rdma;
  /// This node's structured-output compiler (`so_compiler_actor`), advertised by nodes with the
  /// `so` role: entrypoints send their constraints there (DESIGN §5.3). Null on other nodes.
  caf::strong_actor_ptr so_compiler;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(caf::meta::type_name("node_info"), x.name, x.host, x.port, x.roles, x.pid, x.incarnation,
           x.swa_shard, x.snapshots, x.rdma, x.so_compiler);
}

/// Lifecycle of an instance (one prefill or decode communication domain). `draining`: a decode
/// instance that got a drain notice (issue 17): routers send it nothing new; it decodes what it
/// holds for the grace period, then hands it to other decode instances.
enum class instance_state : uint8_t { starting, running, restarting, failed, stopped, draining };

/// One instance as its supervisor reports it.
struct instance_status {
  std::string instance;  ///< `<node>/<role>`, unique in the cluster
  std::string node;
  node_role role = node_role::prefill;  ///< prefill | decode | vision
  uint32_t configured_ranks = 0;
  uint32_t healthy_ranks = 0;  ///< = the expert-parallel size of the current generation
  uint32_t generation = 0;     ///< bumped at every restart
  instance_state state = instance_state::starting;
  std::string last_failure;
  /// The instance's supervisor, which hands out its ranks (`get`); how entrypoints on other
  /// nodes reach the instance.
  caf::strong_actor_ptr supervisor;
  /// The ranks of the current generation, index = rank (empty while restarting): placing a
  /// request needs no round trip to the supervisor.
  std::vector<caf::strong_actor_ptr> ranks;
  /// KV tokens one rank's pool holds (blocks x 128); what the decode balancer sizes it by.
  int64_t kv_tokens_per_rank = 0;
  /// Prefill: the cost model fitted on the instance's engine (its node's ISA, threads, backend),
  /// which the prefill balancer prices the jobs it pulls with; all zero: not known.
  balancers::cost_model::config prefill_cost;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, instance_status& x) {
  return f(caf::meta::type_name("instance_status"), x.instance, x.node, x.role, x.configured_ranks,
           x.healthy_ranks, x.generation, x.state, x.last_failure, x.supervisor, x.ranks,
           x.kv_tokens_per_rank, exact(x.prefill_cost.a0), exact(x.prefill_cost.a1), exact(x.prefill_cost.a2),
           exact(x.prefill_cost.a3), exact(x.prefill_cost.f0), exact(x.prefill_cost.f1));
}

/// Node liveness as the controller sees it.
enum class node_state : uint8_t { alive, dead, left };

/// One node in the controller's membership view.
struct node_status {
  node_info info;
  node_state state = node_state::alive;
  /// Milliseconds since the Unix epoch of the last state change.
  int64_t since_ms = 0;
  /// Why the node is dead (the CAF exit reason of its agent), empty when alive.
  std::string reason;
  /// How many times this node name registered (1 = first start).
  uint32_t joins = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_status& x) {
  return f(caf::meta::type_name("node_status"), x.info, x.state, x.since_ms, x.reason, x.joins);
}

/// The whole membership view: every node ever registered and every instance reported.
struct membership_view {
  uint64_t version = 0;
  std::vector<node_status> nodes;
  std::vector<instance_status> instances;
  /// The cluster's one prefill balancer and one decode balancer (DESIGN §6.1, §6.2), on the
  /// controller's node; null until they run (and for a moment after one restarts).
  caf::strong_actor_ptr prefill_balancer;
  caf::strong_actor_ptr decode_balancer;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, membership_view& x) {
  return f(caf::meta::type_name("membership_view"), x.version, x.nodes, x.instances, x.prefill_balancer,
           x.decode_balancer);
}

// -- ranks -------------------------------------------------------------------------------------

/// What a rank answers to a ping: which slot of which generation it is.
struct rank_status {
  uint32_t rank = 0;
  uint32_t ep_size = 0;
  uint32_t generation = 0;
  uint64_t steps = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_status& x) {
  return f(caf::meta::type_name("rank_status"), x.rank, x.ep_size, x.generation, x.steps);
}

// -- payloads ----------------------------------------------------------------------------------

/// A bulk byte payload (KV blocks, benchmarks). std::vector<uint8_t> is written with one memcpy.
struct byte_payload {
  uint64_t id = 0;
  std::vector<uint8_t> bytes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, byte_payload& x) {
  return f(caf::meta::type_name("byte_payload"), x.id, x.bytes);
}

// -- serving -----------------------------------------------------------------------------------

/// One image of a prompt (issue 21): where its placeholders are and what it shows (`mark`), and
/// its decoded pixels (8-bit RGB, row-major), which the prefill side has encoded into the
/// placeholders' input embeddings.
struct prompt_image {
  kv::image_mark mark;
  int32_t width = 0;
  int32_t height = 0;
  std::vector<uint8_t> rgb;
  /// The placeholders' embeddings [mark.tokens x hidden] from a vision rank; empty: the prefill
  /// rank encodes the pixels itself (no vision instance, or it failed).
  std::vector<float> embedding;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prompt_image& x) {
  return f(caf::meta::type_name("prompt_image"), x.mark, x.width, x.height, x.rgb, bulk(x.embedding));
}

/// One image for a vision rank to encode (DESIGN §6.3): 8-bit RGB, row-major.
struct vision_job {
  uint64_t id = 0;
  int32_t width = 0;
  int32_t height = 0;
  std::vector<uint8_t> rgb;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, vision_job& x) {
  return f(caf::meta::type_name("vision_job"), x.id, x.width, x.height, x.rgb);
}

/// A vision rank's answer: the image's placeholder embeddings [tokens x hidden] and the time
/// the encode itself took (the rest of the round trip is queue and transfer), or `error`.
struct vision_result {
  uint64_t id = 0;
  std::vector<float> embedding;
  double encode_seconds = 0;
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, vision_result& x) {
  return f(caf::meta::type_name("vision_result"), x.id, bulk(x.embedding), exact(x.encode_seconds), x.error);
}

/// A structured-output compiler's answer (issue 19): the constraint compiled (into the
/// compiler's cache, where the node's ranks find it) or why it cannot be enforced
/// (`errc::so_refused`: unsupported keyword, bad regex, compile timeout...).
struct so_compiled {
  caf::error error;
  /// Bytes of its automata.
  uint64_t bytes = 0;
  /// Time the compile took (0: it was cached).
  int64_t compile_us = 0;
  /// Tokens of the shortest output the constraint accepts (the end of the reply not counted).
  int64_t shortest_tokens = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, so_compiled& x) {
  return f(caf::meta::type_name("so_compiled"), x.error, x.bytes, x.compile_us, x.shortest_tokens);
}

/// Log-probabilities of generated tokens, one entry per token in order (asked for with
/// sampling_params::logprobs / top_logprobs; empty otherwise). Flat, so a batch is three vectors.
struct token_logprobs {
  /// Of each token under the temperature-1 distribution (engine::sampled_token::logprob).
  std::vector<float> logprob;
  /// Alternatives per token (sampling_params::top_logprobs).
  int32_t top_n = 0;
  /// top_n (id, logprob) pairs per token, best first.
  std::vector<int32_t> top_ids;
  std::vector<float> top_logprobs;
  /// Prompt scores only (prefill_result::prompt_logprobs): each token's rank in the vocabulary.
  std::vector<int32_t> rank;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_logprobs& x) {
  return f(caf::meta::type_name("token_logprobs"), bulk(x.logprob), x.top_n, x.top_ids, bulk(x.top_logprobs), x.rank);
}

/// One of a request's parallel samples (OpenAI's `n`) besides the job's own, sharing its
/// prefill: the sample's job id and seed (prefill_job::samples), then the first token the
/// prefill drew for it (prefill_result::samples; kv_handoff::samples starts those that go on).
struct parallel_sample {
  uint64_t id = 0;
  uint64_t seed = 0;
  int32_t first_token = -1;
  /// The first token ended this sample: it goes to no decode rank.
  bool finished = false;
  /// The first token's log-probabilities (when asked for).
  token_logprobs logprobs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, parallel_sample& x) {
  return f(caf::meta::type_name("parallel_sample"), x.id, x.seed, x.first_token, x.finished, x.logprobs);
}

/// A prompt for a prefill rank; `id` is unique per entrypoint attempt. Once prefilled, the rank
/// hands the sequence's KV to `decode_rank` (chosen by the entrypoint's decode router), which
/// streams tokens to `sink`.
struct prefill_job {
  uint64_t id = 0;
  std::vector<int32_t> tokens;
  engine::sampling_params sampling;
  caf::strong_actor_ptr decode_rank;
  caf::strong_actor_ptr sink;
  /// The SWA directory's answer for the window ending at `snapshot_end` (0: none): the snapshot
  /// server of the node that holds it, asked when this rank's node lacks it.
  int64_t snapshot_end = 0;
  caf::strong_actor_ptr snapshot_owner;
  /// The decode rank's node advertises this RDMA endpoint (node_info::rdma); empty: none, or
  /// RDMA failed for this request before (the retry goes as CAF messages).
  std::string decode_rdma;
  /// The length of the request's own prompt when `tokens` also holds tokens it generated before
  /// it was resubmitted (0: tokens is the prompt). The hit is capped and the bounded decoder
  /// anchored as for the prompt alone, so the resubmission continues the same output.
  int64_t prompt_length = 0;
  /// The prefix-cache namespace of the request's tenant (zero: shared): the rank looks up and
  /// stores this prompt's blocks and snapshots on the chain salted with it.
  kv::cache_salt cache_salt;
  /// Its traffic class: the TTL its blocks are kept for (agent 3 days, chatbot 7 days).
  kv::traffic_class traffic = kv::traffic_class::chatbot;
  /// The prompt's images, ascending by position (empty: text only): their placeholders take the
  /// vision encoder's embeddings, and their marks key the prefix cache.
  std::vector<prompt_image> images;
  /// The request's other parallel samples (id and seed; empty: n = 1): one prefill draws each
  /// its first token, and the decode rank starts each from the same KV.
  std::vector<parallel_sample> samples;
  /// When the requester sent it (microseconds of the system clock; 0: not said): the rank tells
  /// the job's way to it apart from the way back (prefill_result::send_seconds).
  int64_t sent_unix_us = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_job& x) {
  return f(caf::meta::type_name("prefill_job"), x.id, bulk(x.tokens), x.sampling, x.decode_rank, x.sink,
           x.snapshot_end, x.snapshot_owner, x.decode_rdma, x.prompt_length, x.cache_salt, x.traffic,
           x.images, x.samples, x.sent_unix_us);
}

/// What a prefill rank answers: the first token, how the KV left for the decode rank, or `error`.
struct prefill_result {
  uint64_t id = 0;
  int32_t first_token = 0;
  /// The first token ended the request: nothing went to the decode rank.
  bool finished = false;
  /// A `deepinfer` error (actors/errors.hpp) when the prefill failed; none otherwise.
  caf::error error;
  /// Prompt tokens whose KV came from the prefix cache.
  int64_t cached = 0;
  /// The hit came with its SWA snapshot (exact; else the window was replayed), and the snapshot
  /// was fetched from another node.
  bool snapshot_hit = false;
  bool snapshot_remote = false;
  /// The KV transport chosen (meaningful when the KV left: not `finished`, no `error`); the first
  /// token is answered before the KV is exported, so its size comes with the decode's first batch
  /// (token_batch::kv_bytes).
  kv_transport_kind transport = kv_transport_kind::in_process;
  /// The first token's log-probabilities (when asked for).
  token_logprobs logprobs;
  /// prefill_job::samples with their first tokens (and whether each ended there).
  std::vector<parallel_sample> samples;
  /// With sampling_params::prompt_logprobs >= 0: the prompt's tokens from the second on, each
  /// scored by the logits before it (one entry per token, prompt_logprobs alternatives each).
  token_logprobs prompt_logprobs;
  /// The rank's own times for the job (the requester's Server-Timing splits its round trip by
  /// them): from its arrival to the step that took it (block reads, pool room, its images
  /// encoded there, steps ahead of it), and that step's run to the first token.
  double queue_seconds = 0;
  double step_seconds = 0;
  /// The job's way to the rank: from prefill_job::sent_unix_us to the rank's handler (the system
  /// clocks of both: exact on one machine, as good as their sync across machines; -1: the job
  /// did not say when it was sent), and how much of it the rank's thread spent on other work
  /// (steps, other jobs' starts) while the job waited in its mailbox or on the way.
  double send_seconds = -1;
  double busy_seconds = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_result& x) {
  return f(caf::meta::type_name("prefill_result"), x.id, x.first_token, x.finished, x.error,
           x.cached, x.snapshot_hit, x.snapshot_remote, x.transport, x.logprobs, x.samples, x.prompt_logprobs,
           exact(x.queue_seconds), exact(x.step_seconds), exact(x.send_seconds), exact(x.busy_seconds));
}

/// A prefilled sequence on its way to a decode rank (DESIGN §1 step 5). Which fields are set
/// depends on the transport (actors/kv_transport.hpp): `ticket` names a buffer parked in the
/// process (in_process), `packed` carries the cereal-packed KV (caf_message) or an
/// rdma_descriptor (rdma; `ticket` is then the parcel on the prefill node).
struct kv_handoff {
  uint64_t id = 0;
  kv_transport_kind transport = kv_transport_kind::in_process;
  uint64_t ticket = 0;
  std::vector<uint8_t> packed;
  /// The sequence's prefix-cache namespace (prefill_job::cache_salt): decode stores its blocks
  /// under it.
  kv::cache_salt cache_salt;
  /// Its traffic class (prefill_job::traffic): decode stores its blocks with it.
  kv::traffic_class traffic = kv::traffic_class::chatbot;
  /// Its images' marks (prefill_job::images): decode keys the blocks it stores with them.
  std::vector<kv::image_mark> images;
  /// Parallel samples (empty: the one sequence `id`, as exported): decode starts one sequence
  /// per entry from this KV, each with its own id, seed and first token (the job's own sample
  /// is an entry too, unless its first token ended it).
  std::vector<parallel_sample> samples;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_handoff& x) {
  return f(caf::meta::type_name("kv_handoff"), x.id, x.transport, x.ticket, x.packed, x.cache_salt, x.traffic,
           x.images, x.samples);
}

/// Tokens a decode rank produced for one sequence since its last batch.
struct token_batch {
  uint64_t id = 0;
  std::vector<int32_t> tokens;
  bool finished = false;
  /// A `deepinfer` error when the rank could not continue the sequence (it is freed); none otherwise.
  caf::error error;
  /// On the first batch after a handoff: the KV bytes that arrived (metrics).
  uint64_t kv_bytes = 0;
  /// The tokens' log-probabilities (when asked for).
  token_logprobs logprobs;
  /// Drafts the step verified for this sequence and how many were accepted (a request with a
  /// prediction reports them as accepted / rejected prediction tokens).
  int32_t drafted = 0;
  int32_t accepted = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_batch& x) {
  return f(caf::meta::type_name("token_batch"), x.id, x.tokens, x.finished, x.error, x.kv_bytes, x.logprobs,
           x.drafted, x.accepted);
}

// -- balancers ---------------------------------------------------------------------------------

/// A request's ask for a prefill rank (DESIGN §6.1). `key` is unique in the cluster (entrypoint
/// tag and attempt); `quota_s` the fitted compute cost of its uncached tokens.
struct prefill_ask {
  uint64_t key = 0;
  int64_t input_len = 0;
  double quota_s = 0.0;
  /// Tokens of the prompt the prefix cache does not hold (what the autoscaler's missed-token
  /// rate counts); the rest (`input_len - missed_tokens`) is the hit an instance with its own
  /// cost model prices the job by.
  int64_t missed_tokens = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefill_ask& x) {
  return f(caf::meta::type_name("prefill_ask"), x.key, x.input_len, exact(x.quota_s), x.missed_tokens);
}

/// A request's decode placement as the decode balancer knows it: asked for (`place`: instance
/// empty) or held and growing (`grow`: its rank and the KV length now).
struct decode_claim {
  uint64_t key = 0;
  std::string instance;
  uint32_t rank = 0;
  int64_t kv_tokens = 0;
  /// The most KV it may reach (prompt + max_tokens): the rank must have room for that.
  int64_t reserve_tokens = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, decode_claim& x) {
  return f(caf::meta::type_name("decode_claim"), x.key, x.instance, x.rank, x.kv_tokens, x.reserve_tokens);
}

/// Where a balancer put a request: a rank of a running instance, with its handle.
struct rank_grant {
  std::string instance;
  uint32_t rank = 0;
  caf::strong_actor_ptr handle;
  /// The rank's node's RDMA KV endpoint (empty: none).
  std::string rdma;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rank_grant& x) {
  return f(caf::meta::type_name("rank_grant"), x.instance, x.rank, x.handle, x.rdma);
}

/// An instance's expert-parallel group as its supervisor knows it (`GET /admin/instances`).
struct ep_report {
  std::string instance;
  uint32_t generation = 0;
  uint32_t ep_size = 0;         ///< ranks of the current generation (0 while restarting)
  uint32_t configured_ranks = 0;
  int64_t steps = 0;            ///< group steps so far (as rank 0 last published)
  double moe_lb = 1.0;
  int64_t replacements = 0;
  int64_t moved_slots = 0;
  uint32_t layers = 0, experts = 0, slots_per_rank = 0;
  /// Routed expert of every slot: [layer][rank * slots_per_rank + slot] (empty without EP).
  std::vector<int32_t> placement;
  /// Bytes of routed-expert weights each rank holds in its slots.
  std::vector<uint64_t> routed_expert_bytes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ep_report& x) {
  return f(caf::meta::type_name("ep_report"), x.instance, x.generation, x.ep_size, x.configured_ranks,
           x.steps, exact(x.moe_lb), x.replacements, x.moved_slots, x.layers, x.experts, x.slots_per_rank,
           x.placement, x.routed_expert_bytes);
}

/// What the controller's autoscaler asks a ready-pool node (issue 17): `assign` makes it an
/// instance of `role`; `unassign` drains that instance (decode: `grace_ms` of decoding on, then
/// its requests move with their KV; prefill: what it holds finishes) and returns the node to the
/// pool.
struct pool_assignment {
  node_role role = node_role::decode;
  int64_t grace_ms = -1; ///< unassign: < 0 the instance's configured grace
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_assignment& x) {
  return f(caf::meta::type_name("pool_assignment"), x.role, x.grace_ms);
}

} // namespace deepinfer::actors

CAF_BEGIN_TYPE_ID_BLOCK(deepinfer, caf::first_custom_type_id)
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::role_set))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::node_info))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::instance_status))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::node_status))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::membership_view))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::rank_status))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::byte_payload))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::engine::sampling_params))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::prefill_job))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::kv::block_key))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::kv::cache_salt))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::prefill_result))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::kv_handoff))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::token_batch))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::prefill_ask))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::decode_claim))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::rank_grant))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::ep_report))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::token_logprobs))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::parallel_sample))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::kv::image_mark))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::prompt_image))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::vision_job))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::vision_result))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::pool_assignment))
  CAF_ADD_TYPE_ID(deepinfer, (deepinfer::actors::so_compiled))
CAF_END_TYPE_ID_BLOCK(deepinfer)
