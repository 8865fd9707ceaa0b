#pragma once

#include "kv/block_key.hpp"
#include "kv/clock.hpp"
#include "kv/consistent_hash_ring.hpp"
#include "kv/swa_directory_shard.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace deepinfer::kv {

/// Where the SWA snapshot ending at a key lives, from the asking node's point of view.
enum class swa_where : uint8_t { absent, local, remote };

/// The answer of an SWA directory lookup.
struct swa_location {
  swa_where where = swa_where::absent;
  /// The owner node when `where != absent`.
  std::optional<node_id> owner;

  friend bool operator==(const swa_location&, const swa_location&) = default;
};

/// The SWA directory (DESIGN §4.2): logically one map from block key to the node holding the
/// snapshot ending there, sharded by key over N `swa_directory_shard`s with consistent hashing
/// (the actor shells put one shard per entrypoint). Losing a shard loses only its entries, which
/// then read as absent (the hit policy replays). Thread-safe.
class swa_directory {
public:
  /// Shard count, hashing, TTL of entries and clock.
  struct config {
    uint32_t shards = 8;
    consistent_hash_ring::config ring;
    int64_t ttl_ms = 180'000;
    std::shared_ptr<const clock> time = system_clock();
  };

  /// A directory with shards 0..shards-1, all empty.
  explicit swa_directory(const config& cfg);

  /// The shard responsible for `key`; `nullopt` when no shard is left.
  std::optional<shard_id> shard_for(const block_key& key) const;

  /// Records that `owner` now holds the snapshot ending at `key` (for `ttl_ms`).
  void record(const block_key& key, node_id owner);

  /// Local (the asker owns it), remote (another owner), or absent.
  swa_location lookup(const block_key& key, node_id asker);

  /// Drops the entry for `key`; false if absent.
  bool forget(const block_key& key);

  /// Drops every entry owned by `owner` (the node died); returns how many.
  std::size_t forget_node(node_id owner);

  /// Adds an empty shard; false if present. About 1/N of the keys move to it (and read absent).
  bool add_shard(shard_id shard);

  /// Removes a shard and its entries; false if absent.
  bool remove_shard(shard_id shard);

  /// Number of entries over all shards.
  std::size_t size() const;

  /// Number of entries in one shard; 0 for an unknown shard.
  std::size_t shard_size(shard_id shard) const;

private:
  config cfg_;
  mutable std::mutex mtx_;
  consistent_hash_ring ring_;
  std::map<shard_id, swa_directory_shard> shards_;
};

} // namespace deepinfer::kv
