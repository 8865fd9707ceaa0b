#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/backends/backend.hpp"
#include "engine/backends/backend_kind.hpp"
#include "engine/decoder_mode.hpp"
#include "engine/kernels/isa.hpp"
#include "engine/ids.hpp"
#include "engine/kv_pool.hpp"
#include "engine/model/draft_head.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/vision_encoder.hpp"
#include "engine/model/weights.hpp"
#include "engine/sampler.hpp"
#include "engine/speculative_mode.hpp"

namespace deepinfer::engine {

class token_constraint_factory;

class ep_rank;

/// A prefill to run on this rank.
struct prefill_request {
  sequence_id seq;
  /// The whole prompt (at least hit_length + 1 tokens).
  std::vector<int32_t> tokens;
  /// Tokens [0, hit_length) have block KV already (a multiple of 128): taken from
  /// `shared_blocks` (blocks already in this rank's pool, referenced, never copied) followed by
  /// `hit_blocks` (buffers from `export_block` / the block store).
  int64_t hit_length = 0;
  std::vector<block_id> shared_blocks;
  std::vector<std::vector<std::byte>> hit_blocks;
  /// The hit's blocks arrive later, through `import_hit_blocks` (hit_blocks and shared_blocks
  /// empty): the encoder runs meanwhile (it needs the snapshot, not the blocks), the decoder,
  /// which reads them, waits. How a block fetch overlaps the prompt's own compute.
  bool blocks_later = false;
  /// The SWA snapshot ending at hit_length (`export_snapshot`): the encoder window, followed by
  /// the decoder windows when the producer ran exactly. Without it the encoder replays
  /// [hit_length - 128, hit_length) with bounded attention, reusing their block KV. In exact mode
  /// the decoder windows let the decoder resume at hit_length, so a hit changes no bit.
  std::optional<std::vector<std::byte>> snapshot;
  decoder_mode mode = decoder_mode::bounded;
  /// Bounded mode: the decoder runs over [decoder_from, L) (-1: over the last 128 tokens). A
  /// resubmitted request (prompt + what it generated) passes its first prompt's L - 128, so the
  /// decoder rebuilds the windows the first prefill and its decode steps built and the output
  /// continues unchanged; the hit must then end at or before decoder_from (the caller caps it).
  int64_t decoder_from = -1;
  sampling_params sampling;
  /// The vision embeddings of the prompt's images (`encode_image`), ascending and disjoint:
  /// every encoder pass over their positions (the prompt's own, a window replay) embeds them.
  /// Those that end at or before `first_encoded_position` may be left out (the hit holds them).
  std::vector<image_embedding> images;
  /// Parallel samples of this prompt besides its own (OpenAI's `n`): each seed draws its own
  /// first token from the same last-position logits, as a request of that seed alone would
  /// (`prefill_progress::samples`); their sequences are this one's export with that first token
  /// (`import_sequence`'s `first_token`). One prefill for all of them.
  std::vector<uint64_t> sample_seeds;
};

/// One SWA snapshot and the position it ends at (a multiple of 128).
struct snapshot_copy {
  int64_t end = 0;
  std::vector<std::byte> bytes;
};

/// Why a call did not do what was asked.
enum class engine_status : uint8_t { ok, invalid_request, does_not_fit, unknown_sequence, bad_kv };

/// What one prefill step did.
struct prefill_progress {
  engine_status status = engine_status::ok;
  std::string error;
  /// Prompt tokens the encoder processed in this step.
  int64_t tokens = 0;
  /// True once the whole prompt is done; `first` and `logits` are then set.
  bool done = false;
  sampled_token first;
  /// The first token of each of `prefill_request::sample_seeds`, in order.
  std::vector<sampled_token> samples;
  /// Logits of the last prompt position (vocab floats).
  std::vector<float> logits;
  /// With sampling_params::prompt_logprobs >= 0: prompt tokens 1 .. L-1 scored by the logits
  /// of the position before each (its log-probability and the most likely ids there).
  std::vector<sampled_token> prompt;
};

/// The next token of one sequence after a decode step.
struct decode_output {
  sequence_id seq;
  engine_status status = engine_status::ok;
  sampled_token token;
  /// True when this token ends the request (stop id or max tokens).
  bool finished = false;
};

/// One sequence's part of a speculative step: verify the first `drafts` tokens of its current
/// proposal (`rank_engine::proposal`); 0 is a plain decode step for it.
struct verify_request {
  sequence_id seq;
  int32_t drafts = 0;
};

/// What one sequence did in a speculative step.
struct verify_output {
  sequence_id seq;
  engine_status status = engine_status::ok;
  /// The tokens appended: the accepted drafts, then the target's own token after them (fewer
  /// when a stop id or max tokens ended the request inside the drafts).
  std::vector<sampled_token> tokens;
  /// Drafts verified and how many of them the target accepted (a prefix).
  int32_t drafted = 0;
  int32_t accepted = 0;
  bool finished = false;
};

/// One rank's engine: the model, its backend, the paged KV pool and the sequences it holds.
/// Synchronous and single-threaded from the caller's side (an actor owns one); the backend
/// parallelizes inside each call.
class rank_engine {
public:
  /// Engine settings.
  struct config {
    /// Blocks of the KV pool (128 tokens each).
    int64_t kv_blocks = 1024;
    /// Threads of the CPU backend (counting the caller).
    int threads = 2;
    /// CPU kernels to run; nullopt: the best this CPU runs. Precondition: this CPU supports it
    /// (launcher/ checks `--cpu-isa` with `kernels::choose_cpu_isa`).
    std::optional<kernels::cpu_isa> isa;
    /// Makes the token masks of requests with a structured-output spec
    /// (`sampling_params::constraint`); null: such requests are refused (invalid_request).
    std::shared_ptr<token_constraint_factory> constraints = nullptr;
    /// Not off: after every prefill and decode step the model's draft head (when it has one)
    /// proposes the next tokens of each sequence, for `verify_step`.
    speculative_mode speculative = speculative_mode::off;
    /// Where the forward's matrix products run (`make_backend`): the CPU, or a CUDA device; a
    /// CUDA backend that cannot be made (no device) fails `load` with its reason.
    backend_kind backend = backend_kind::cpu;
    /// CUDA: which visible device, modulo their count (a node passes its rank index, so its
    /// ranks spread one per GPU).
    int device_slot = 0;
  };

  /// Result of `load`.
  struct load_result {
    std::unique_ptr<rank_engine> engine;
    std::string error;
  };

  /// Loads the model directory (`model_weights::load_shared`: the ranks of one process share one
  /// copy of the weights, and the CPU backends one copy of their packed panels) and builds the
  /// pool. Never throws.
  static load_result load(const std::string& model_dir, const config& cfg);
  /// The same on a backend made elsewhere (an embedder's, a test's device emulation); `cfg`'s
  /// backend fields are then not used.
  static load_result load(const std::string& model_dir, const config& cfg, std::unique_ptr<backend> b);
  ~rank_engine();

  /// Registers a prefill: imports hit blocks, restores or replays the encoder window and
  /// reserves KV for the whole prompt. `does_not_fit` leaves nothing behind.
  prefill_progress begin_prefill(const prefill_request& req);
  /// Runs the encoder over up to `max_tokens` more prompt tokens; the step that finishes the
  /// prompt also runs the decoder and samples the first token.
  prefill_progress prefill_step(sequence_id seq, int64_t max_tokens);
  /// begin_prefill + prefill_step over the whole prompt.
  prefill_progress prefill(const prefill_request& req);
  /// The first prompt position an encoder pass of `req` reaches: its hit length with a snapshot,
  /// the hit less the window without one (the replay), 0 without a hit. The images that end at
  /// or before it need no embeddings: their KV comes with the hit.
  int64_t first_encoded_position(const prefill_request& req) const;

  /// One batched decode step: feeds each sequence's last token and samples the next. Sequences
  /// that are unknown, finished or out of KV get a non-ok status and do not advance.
  /// `logits` / `hidden` (optional) receive the live rows' logits [rows x vocab] and final
  /// hidden states before the final norm [rows x hidden] (draft distillation fits on them), in
  /// the order of `seqs` with the non-ok ones left out.
  std::vector<decode_output> decode_step(std::span<const sequence_id> seqs,
                                         std::vector<float>* logits = nullptr,
                                         std::vector<float>* hidden = nullptr);

  /// One batched speculative step (DESIGN.md §5.3): every sequence's last token and its chosen
  /// drafts go through one forward as consecutive rows; the longest prefix of drafts the target
  /// itself samples is accepted, then the target's token after it. Each emitted token is drawn
  /// exactly as `decode_step` draws it (same logits, same generator draw), so under greedy and
  /// at any temperature the output equals non-speculative decoding token for token: a draft is
  /// accepted iff the target's sample equals it, which for a point-mass draft is rejection
  /// sampling (accept with probability p(draft), else a sample of the residual). The K/V of the
  /// rejected rows is dropped (the rings' spare slots held it). Sequences that are unknown,
  /// finished or out of KV get a non-ok status and do not advance.
  std::vector<verify_output> verify_step(std::span<const verify_request> reqs);
  /// The draft head's proposal for `seq`'s next tokens, or for a request with a prediction
  /// (sampling_params::prediction) the prediction's (`predicted_drafts`; head or not); count 0:
  /// no head, speculation off, or unknown sequence.
  draft_proposal proposal(sequence_id seq) const;
  /// Replaces `seq`'s proposal (drafts from elsewhere; tests). False when unknown.
  bool set_proposal(sequence_id seq, const draft_proposal& p);
  /// True when the model has a draft head and the engine proposes with it.
  bool drafting() const { return draft_ != nullptr; }
  /// Paused, the steps leave every proposal empty instead of running the draft head (its cost
  /// is a sixth of a tiny decode row): the planner pauses it while it verifies next to no drafts.
  void pause_proposing(bool paused) { proposing_paused_ = paused; }

  /// Replaces the token the next decode step feeds (teacher forcing for measurements and
  /// speculative verification). False when the sequence is unknown or still prefilling.
  bool force_next_token(sequence_id seq, int32_t token);

  /// Block `index` (full, 128 tokens) of `seq`'s global KV as a buffer for the block store.
  std::optional<std::vector<std::byte>> export_block(sequence_id seq, int64_t index) const;
  /// The latest SWA snapshot (nullopt when none was taken yet). It holds the encoder window
  /// and, when the sequence's decoder windows are exact (exact or full mode), the decoder's.
  std::optional<std::vector<std::byte>> export_snapshot(sequence_id seq) const;
  /// The position the latest snapshot ends at (a multiple of 128); nullopt when none.
  std::optional<int64_t> snapshot_end(sequence_id seq) const;
  /// Every snapshot the sequence holds, oldest first. A prefill of L tokens takes them at
  /// align_down(L - ring, 128), the hit of the same prompt sent again (a retry, a regenerate),
  /// and at align_down(L - 1, 128) (DESIGN §4.2), the hit of a next turn; decode keeps the
  /// window of the last 128 boundary it crossed.
  std::vector<snapshot_copy> export_snapshots(sequence_id seq) const;
  /// Everything decode needs to continue `seq` elsewhere: tokens, KV rows, both windows.
  std::optional<std::vector<std::byte>> export_sequence(sequence_id seq) const;
  /// Recreates a sequence from `export_sequence` with its own sampling settings. `first_token`
  /// (>= 0) replaces the exported last token, which has no KV yet: a parallel sample of the
  /// same prompt (`prefill_request::sample_seeds`) starts from the shared KV with its own.
  engine_status import_sequence(sequence_id seq, std::span<const std::byte> bytes,
                                const sampling_params& sampling, std::string* error = nullptr,
                                int32_t first_token = -1);
  /// Drops the sequence and its block references.
  void free(sequence_id seq);

  /// Copies the hit's blocks of a `blocks_later` prefill into their pool blocks, in order (one
  /// per 128 hit tokens); the prefill can then finish. bad_kv (the sequence unchanged) when a
  /// buffer is not a block of this model; invalid_request when none are awaited.
  engine_status import_hit_blocks(sequence_id seq, const std::vector<std::vector<std::byte>>& blocks,
                                  std::string* error);
  /// True while a `blocks_later` prefill waits for its blocks.
  bool awaiting_blocks(sequence_id seq) const;

  /// Makes this engine rank `member.rank()` of an expert-parallel group (engine/ep/ep_group.hpp):
  /// from now on it keeps only the member's slots' routed experts (the others' prepared copies
  /// are released), and every forward it runs takes part in the group's current step: its
  /// caller ends each step with `member.end_step()`, on every rank of the group, also on a step
  /// without requests. The calls that run forwards (and so take part): begin_prefill when it
  /// replays the encoder window (a hit without a snapshot), prefill_step, prefill, decode_step
  /// with a live sequence. Joining another group (an elastic rebuild) leaves the previous one; its
  /// sequences stay; a group destroyed first hands the routed experts back (computed locally
  /// again). Precondition: no forward is running.
  void join_ep_group(ep_rank& member);
  /// The group member this engine computes with; nullptr when it runs every expert itself.
  ep_rank* ep_member() const { return ep_; }

  /// True when the model has a vision encoder (`encode_image` works).
  bool has_vision() const { return vision_ != nullptr; }
  /// The placeholder embeddings of one image ([tokens x hidden], `vision_encoder::encode`).
  /// Precondition: has_vision() and the image covers at least one cell.
  std::vector<float> encode_image(const image_pixels& img) { return vision_->encode(img); }
  /// The vision encoder; nullptr when the model has none.
  vision_encoder* vision() { return vision_.get(); }

  /// Positions of `seq` with block KV computed (prefill progress); nullopt when unknown.
  std::optional<int64_t> computed(sequence_id seq) const;
  /// Tokens of `seq` so far (prompt + generated); empty when unknown.
  std::vector<int32_t> tokens(sequence_id seq) const;
  const model_config& model() const { return weights_->config(); }
  /// Time per forward stage since load (benchmarks' breakdowns).
  const ced_moe_forward::stage_ns& forward_stages() const { return forward_.stages(); }
  kv_pool& pool() { return pool_; }
  backend& compute() { return *backend_; }

private:
  struct sequence;
  rank_engine(std::shared_ptr<const model_weights> w, std::unique_ptr<backend> b, const config& cfg);
  void run_encoder(sequence& s, int64_t begin, int64_t end, bool write_kv);
  void finish_prefill(sequence& s, prefill_progress& out);
  void run_decoder(sequence& s, int64_t begin, int64_t end);
  /// Fills `out.prompt` (prompt logprobs) from the decoder's final state of every prompt row.
  void score_prompt(const sequence& s, prefill_progress& out);
  std::vector<std::byte> encode_snapshot(const sequence& s, bool with_decoder) const;
  /// Samples `s`'s next token from its row of `logits` (masked in place when it is constrained).
  bool sample_and_append(sequence& s, float* logits, sampled_token& tok);
  /// The first token a parallel sample of `s` (seed `seed`) draws from the prompt's raw last
  /// logits (a copy: each sample processes its own), before `s` appends its own.
  sampled_token draw_first(const sequence& s, uint64_t seed, std::vector<float> logits) const;
  /// Makes `s.constraint` from its sampling spec after the output it has; an error message when
  /// it cannot.
  std::string attach_constraint(sequence& s) const;
  /// The proposals after rows `x` [n x hidden] of `seqs` (each sequence's last token is the
  /// first draft's previous token).
  void propose(std::span<sequence* const> seqs, const float* x);
  /// `s`'s proposal: its prediction's drafts when it has one (drafted once per output length,
  /// kept in `s`), else the head's last.
  const draft_proposal& proposal_of(sequence& s) const;
  /// The SWA snapshot of the windows as they were at `end` (<= the windows' end, within the
  /// spare slots): a speculative step crosses a 128 boundary with up to 5 tokens past it.
  std::vector<std::byte> encode_snapshot_at(const sequence& s, int64_t end) const;
  /// A logits buffer of at least `floats`, kept between steps: a batch of 64 rows of a 129K
  /// vocabulary is 33 MB, and a fresh vector each step paid its page faults and zero fill (a
  /// fifth of a speculative step's time at batch 64 on the tiny model).
  float* logits_scratch(int64_t floats);

  config config_;
  std::shared_ptr<const model_weights> weights_; ///< shared with the process's other ranks of the model
  std::unique_ptr<backend> backend_;
  ced_moe_forward forward_;
  std::unique_ptr<draft_head> draft_;
  kv_pool pool_;
  std::unique_ptr<vision_encoder> vision_;
  std::unordered_map<sequence_id, std::unique_ptr<sequence>> seqs_;
  ep_rank* ep_ = nullptr;
  std::vector<float> logits_scratch_;
  bool proposing_paused_ = false;
};

} // namespace deepinfer::engine
