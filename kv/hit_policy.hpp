#pragma once

#include "kv/block_key.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace deepinfer::kv {

/// How the encoder's sliding window is restored at the hit boundary.
enum class swa_mode : uint8_t {
  none,   ///< nothing is reused (hit_length == 0 and no block is fetched)
  exact,  ///< an SWA snapshot ends at the reused length: load it, the hit is exact
  replay, ///< no snapshot: replay the last reused block with bounded attention (DESIGN §5.2)
};

/// The outcome of the hit policy for one prompt.
struct hit_decision {
  /// Tokens whose computation is skipped; prefill computes [hit_length, L).
  std::size_t hit_length = 0;
  /// How the SWA window at `hit_length` is obtained.
  swa_mode swa = swa_mode::none;
  /// Leading blocks to fetch from the block store (= L1 / 128). With `replay`, the last one is
  /// fetched too: its block KV is reused, never recomputed or overwritten.
  std::size_t blocks = 0;
  /// With `replay`: the encoder replays tokens [replay_begin, replay_begin + block size).
  std::size_t replay_begin = 0;

  /// The keys to fetch: the first `blocks` keys of `chain`.
  /// Precondition: `chain` is the chain the decision was taken for.
  std::span<const block_key> blocks_of(std::span<const block_key> chain) const {
    return chain.first(blocks < chain.size() ? blocks : chain.size());
  }

  friend bool operator==(const hit_decision&, const hit_decision&) = default;
};

/// The hit policy of DESIGN §4.3 as a pure function. For a prompt of length L: cap = L - ring;
/// L1 = the longest stored run of blocks that fits in the cap; if an SWA snapshot ends at L1 the
/// hit is L1 (exact), otherwise L1 - block (replay of [L1 - block, L1)).
class hit_policy {
public:
  /// Sizes; defaults are V4.1-Flash's.
  struct config {
    /// Tokens per block.
    std::size_t block = block_tokens;
    /// SWA ring: window (128) + speculative rollback (6). At least this many prompt tokens are
    /// always computed, so the ring is filled by prefill itself.
    std::size_t ring = 134;
  };

  hit_policy() = default;

  /// A policy with custom sizes (tiny models in tests).
  explicit hit_policy(const config& cfg) : cfg_(cfg) {
    // nop
  }

  /// L1: tokens in the first `stored_blocks` blocks that fit under the cap `L - ring`; a
  /// multiple of the block size, 0 when L <= ring.
  std::size_t reusable_length(std::size_t prompt_length, std::size_t stored_blocks) const;

  /// The decision for a prompt of `prompt_length` tokens whose first `stored_blocks` blocks are
  /// stored, where `swa_at_l1` says whether an SWA snapshot ends at `reusable_length(...)`.
  hit_decision operator()(std::size_t prompt_length, std::size_t stored_blocks, bool swa_at_l1) const;

  /// The same, asking `has_swa(l1)` only when there is an L1 > 0 to ask about.
  template <class Predicate>
  hit_decision decide(std::size_t prompt_length, std::size_t stored_blocks, Predicate&& has_swa) const {
    const std::size_t l1 = reusable_length(prompt_length, stored_blocks);
    return (*this)(prompt_length, stored_blocks, l1 > 0 && has_swa(l1));
  }

  /// The sizes in use.
  const config& cfg() const { return cfg_; }

private:
  config cfg_;
};

} // namespace deepinfer::kv
