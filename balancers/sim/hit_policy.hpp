#pragma once

#include <cstdint>

namespace deepinfer::balancers::sim {

/// The hit policy of DESIGN §4.3 as a pure function (128-token blocks, SWA ring of 134).
///
/// NOTE: kv/ (branch `kv`) owns the production version; the simulator should call kv's
/// hit policy once it is merged. This copy follows §4.3 to the letter so the two can be diffed.
class hit_policy {
public:
  static constexpr int64_t block_tokens = 128;
  static constexpr int64_t swa_ring = 134; ///< 128 window + 6 speculative rollback

  /// Outcome for one prompt.
  struct result {
    int64_t hit = 0;    ///< prefix tokens whose KV is reused without recomputation
    int64_t replay = 0; ///< tokens [hit, hit + replay) re-run with bounded attention (block KV reused)
    bool exact = false; ///< an SWA snapshot covered the window ending at L1
  };

  /// L1 for a prompt of `prompt_len` tokens whose first `stored_blocks` blocks are stored:
  /// the longest run of stored blocks within cap = L - 134, in tokens (a multiple of 128).
  static int64_t l1(int64_t prompt_len, int64_t stored_blocks);

  /// The hit given L1 and whether an SWA snapshot covers the window ending at L1:
  /// exact hit = L1, otherwise hit = L1 - 128 with 128 tokens of replay; 0 when L1 is 0.
  static result resolve(int64_t l1_tokens, bool snapshot_at_l1);
};

} // namespace deepinfer::balancers::sim
