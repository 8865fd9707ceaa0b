#pragma once

#include "kv/block_key.hpp"
#include "kv/flat_key_set.hpp"

#include <cstddef>
#include <functional>
#include <shared_mutex>
#include <span>

namespace deepinfer::kv {

/// The answer of CHECK for one chain.
struct prefix_hit {
  /// Leading blocks of the chain that are stored.
  std::size_t blocks = 0;
  /// How many of them the index did not know and found by asking the probe (written elsewhere).
  std::size_t revalidated = 0;

  /// Tokens covered by the hit.
  std::size_t tokens() const { return blocks * block_tokens; }
};

/// CHECK: the longest stored prefix of a hash chain, from metadata only (DESIGN §4.1).
///
/// An in-memory set of keys, filled at start from a store scan, kept current by local writes and
/// evictions. Other processes writing to the same root are seen through the probe: at the first
/// key the set lacks, the probe (a single `stat` for a file store) is asked, and a yes is
/// remembered, so a miss costs one probe and a block written elsewhere costs one probe once.
/// A block removed elsewhere stays a (stale) hit until a read fails and the caller `erase`s it.
/// Thread-safe.
class check_index {
public:
  /// Answers whether a block exists in the backing store; empty means "the index is the truth".
  using probe = std::function<bool(const block_key&)>;

  /// An index with no entries.
  explicit check_index(probe revalidate = {});

  /// Leading blocks of `chain` that are stored.
  prefix_hit longest_prefix(std::span<const block_key> chain);

  /// Records a stored block.
  void insert(const block_key& key);

  /// Forgets a block (evicted, or found missing by a read); false if it was not known.
  bool erase(const block_key& key);

  /// True if the index knows the block (no probe).
  bool contains(const block_key& key) const;

  /// Number of known blocks.
  std::size_t size() const;

private:
  mutable std::shared_mutex mtx_;
  flat_key_set keys_;
  probe probe_;
};

} // namespace deepinfer::kv
