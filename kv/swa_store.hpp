#pragma once

#include "kv/block_key.hpp"
#include "kv/clock.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace deepinfer::kv {

/// An SWA snapshot's bytes, shared: eviction drops the store's reference, never a reader's.
using swa_snapshot = std::shared_ptr<const std::vector<std::byte>>;

/// SWA window snapshots kept in the memory of the node that produced them (DESIGN §4.2), keyed by
/// the key of the block the window ends with. Entries live `ttl_ms` after they were stored; past
/// the memory cap the least recently used go first. Thread-safe.
class swa_store {
public:
  /// TTL, memory cap and clock.
  struct config {
    int64_t ttl_ms = 180'000;
    uint64_t memory_cap_bytes = 1ULL << 30;
    std::shared_ptr<const clock> time = system_clock();
  };

  /// An empty store.
  explicit swa_store(const config& cfg);

  /// Stores (or replaces) the snapshot ending at block `key`; false if it alone exceeds the cap.
  bool put(const block_key& key, std::vector<std::byte> snapshot);

  /// The snapshot ending at `key`; nullptr if absent or expired. Refreshes its LRU position (not its TTL).
  swa_snapshot get(const block_key& key);

  /// True if a live snapshot ends at `key` (no LRU refresh).
  bool contains(const block_key& key) const;

  /// Drops the snapshot; false if absent.
  bool erase(const block_key& key);

  /// Drops every expired snapshot; returns how many.
  std::size_t expire();

  /// Number of snapshots held (expired ones included until touched or expired).
  std::size_t size() const;

  /// Bytes held.
  uint64_t bytes() const;

private:
  struct entry {
    block_key key;
    swa_snapshot data;
    int64_t stored_ms = 0;
  };
  using lru_list = std::list<entry>; // front = most recently used

  void drop(std::unordered_map<block_key, lru_list::iterator, block_key_hash>::iterator it);

  config cfg_;
  mutable std::mutex mtx_;
  lru_list lru_;
  std::unordered_map<block_key, lru_list::iterator, block_key_hash> index_;
  uint64_t bytes_ = 0;
};

} // namespace deepinfer::kv
