#pragma once

#include "kv/block_catalog.hpp"

#include <cstdint>
#include <vector>

namespace deepinfer::kv {

/// What GC removes, as a strategy (SGLang `evict_policy.py`). Proposals only: GC skips any
/// proposed block that a reader pins before it is removed.
class eviction_policy {
public:
  virtual ~eviction_policy() = default;

  /// Required. Appends to `out` unheld blocks to evict, best victim first, until they add up to
  /// at least `bytes_to_free` (or the catalog runs out of unheld blocks).
  virtual void victims(const block_catalog& catalog, uint64_t bytes_to_free,
                       std::vector<block_key>& out) const = 0;

  /// Optional (default: nothing expires). Appends to `out` unheld blocks whose time to live has
  /// run out at `now_ms`.
  virtual void expired(const block_catalog& catalog, int64_t now_ms, std::vector<block_key>& out) const {
    (void) catalog;
    (void) now_ms;
    (void) out;
  }
};

} // namespace deepinfer::kv
