#pragma once

#include "engine/rank_engine.hpp"
#include "engine/token_constraint.hpp"

namespace deepinfer::engine {

/// The state of one sequence on a rank (private to rank_engine's .cpp files).
struct rank_engine::sequence {
  sequence_id id;
  /// Prompt, then generated tokens; the last one is fed by the next decode step.
  std::vector<int32_t> tokens;
  int64_t prompt_len = 0;
  /// Positions whose block KV and encoder windows exist.
  int64_t kv_len = 0;
  decoder_mode mode = decoder_mode::bounded;
  sequence_windows windows;
  /// The decoder's quantized indexer keys so far (each decode step adds one).
  index_key_cache index_keys;
  /// Prefill only: the decoder runs over [decoder_start, prompt_len) from these encoder outputs.
  int64_t decoder_start = 0;
  std::vector<float> tail;
  /// Prefill only: where snapshots are taken, ascending.
  std::vector<int64_t> snapshot_at;
  /// Snapshots held, oldest first (prefill: one per point; decode: the last boundary crossed).
  std::vector<snapshot_copy> snapshots;
  /// True when the decoder windows equal a full run's (exact or full mode, and a hit that did
  /// not cut the decoder's history short); only then do snapshots carry them.
  bool decoder_exact = false;
  /// Prefill only: the decoder windows at decoder_start came from the hit's snapshot.
  bool decoder_restored = false;
  bool prefilling = false;
  /// A `blocks_later` prefill: the hit's blocks (positions [0, kv_len at begin)) not in yet.
  int64_t awaited_blocks = 0;
  sampling_params sampling;
  /// The prompt's image embeddings (prefill_request::images).
  std::vector<image_embedding> images;
  /// Structured output (null: unconstrained), made from `sampling.constraint`.
  std::unique_ptr<token_constraint> constraint;
  /// Prefill only: the parallel samples' seeds (prefill_request::sample_seeds).
  std::vector<uint64_t> sample_seeds;
  int32_t generated = 0;
  /// The draft head's tokens after the last one (count 0 when not drafting); for a request with
  /// a prediction, the prediction's drafts as of `predicted_at` tokens (`rank_engine::proposal_of`).
  draft_proposal proposal;
  std::size_t predicted_at = 0;
  bool finished = false;
};

} // namespace deepinfer::engine
