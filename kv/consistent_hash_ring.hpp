#pragma once

#include "kv/block_key.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace deepinfer::kv {

/// Identifies one shard of a sharded directory (one shard object, later one actor).
struct shard_id {
  uint32_t value = 0;
  friend bool operator==(const shard_id&, const shard_id&) = default;
  friend auto operator<=>(const shard_id&, const shard_id&) = default;
};

/// Consistent hashing of block keys onto shards, with virtual nodes: adding or removing one of
/// N shards moves only about 1/N of the keys. Not thread-safe (membership changes are rare and
/// owned by one actor; copy the ring to readers).
class consistent_hash_ring {
public:
  /// Virtual nodes per shard.
  struct config {
    uint32_t vnodes = 64;
  };

  /// An empty ring with default virtual nodes.
  consistent_hash_ring() = default;

  /// An empty ring.
  explicit consistent_hash_ring(const config& cfg);

  /// Adds a shard; false if present.
  bool add(shard_id shard);

  /// Removes a shard; false if absent.
  bool remove(shard_id shard);

  /// The shard owning `key`; `nullopt` when the ring is empty.
  std::optional<shard_id> owner(const block_key& key) const;

  /// Number of shards.
  std::size_t size() const { return shards_.size(); }

  /// The shards, in insertion order.
  const std::vector<shard_id>& shards() const { return shards_; }

private:
  config cfg_;
  std::vector<shard_id> shards_;
  std::vector<std::pair<uint64_t, shard_id>> points_; // sorted by point
};

} // namespace deepinfer::kv
