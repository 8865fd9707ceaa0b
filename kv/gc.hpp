#pragma once

#include "kv/block_catalog.hpp"
#include "kv/check_index.hpp"
#include "kv/clock.hpp"
#include "kv/eviction_policy.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>

namespace deepinfer::kv {

/// Where the store's byte count sits relative to the GC watermarks.
enum class watermark_state : uint8_t { below_low, between, above_high };

/// What one GC pass did.
struct gc_report {
  std::size_t expired = 0;
  std::size_t evicted = 0;
  /// Proposed victims that a reader pinned before they could be removed.
  std::size_t skipped_held = 0;
  uint64_t bytes_freed = 0;
  uint64_t bytes_after = 0;
};

/// Garbage collection for one store: removes expired blocks, and when the store is above the
/// high watermark evicts down to the low one, in the order an `eviction_policy` proposes.
/// Never removes a pinned block (see `block_catalog`). Not thread-safe itself: one GC per
/// store, driven by one thread (the GC actor); readers and writers may run concurrently.
class gc {
public:
  /// Watermarks in bytes and the clock that ages blocks.
  struct config {
    uint64_t low_watermark_bytes = 0;
    uint64_t high_watermark_bytes = std::numeric_limits<uint64_t>::max();
    std::shared_ptr<const clock> time = system_clock();
  };

  /// Deletes a block's bytes; true if they are gone. Empty for a metadata-only catalog.
  using remover = std::function<bool(const block_key&)>;

  /// A GC over `catalog` (which must outlive it). `index`, when given, forgets removed blocks
  /// before their bytes go, so that CHECK stops answering them first.
  gc(const config& cfg, block_catalog& catalog, const eviction_policy& policy, remover remove = {},
     check_index* index = nullptr);

  /// The current watermark state.
  watermark_state state() const;

  /// One pass: expire, then evict if above the high watermark. Under `space_pressure` (a write
  /// found the disk full) also evict a tenth of the store's bytes, at least one block, wherever
  /// the watermarks are.
  gc_report run_once(bool space_pressure = false);

  /// Removes one block now if nobody holds it; true if it was removed.
  bool remove(const block_key& key);

private:
  config cfg_;
  block_catalog& catalog_;
  const eviction_policy& policy_;
  remover remove_;
  check_index* index_;
};

} // namespace deepinfer::kv
