#pragma once

#include "engine/rank_engine.hpp"

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
  /// Prefill only: the decoder runs over [decoder_start, prompt_len) from these encoder outputs.
  int64_t decoder_start = 0;
  std::vector<float> tail;
  /// Prefill only: where the encoder snapshot is taken (-1: none), and the snapshot once taken.
  int64_t snapshot_at = -1;
  std::optional<std::vector<std::byte>> snapshot;
  bool prefilling = false;
  sampling_params sampling;
  std::mt19937_64 rng;
  int32_t generated = 0;
  bool finished = false;
};

} // namespace deepinfer::engine
