#pragma once

#include "kv/block_key.hpp"
#include "kv/traffic_class.hpp"

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace deepinfer::kv {

/// Metadata of one stored block.
struct block_meta {
  block_key key;
  /// Bytes the block occupies in the store (header + payload for a file store).
  uint64_t bytes = 0;
  traffic_class cls = traffic_class::chatbot;
  /// Last write or read, in ms since the epoch; LRU order and TTL both count from it.
  int64_t last_use_ms = 0;
};

/// The metadata of a block store: sizes, traffic classes, LRU order and reader pins. Holds no
/// bytes, so the simulator and the trace replay use it without files. Thread-safe.
///
/// Removal is a two-step protocol so that a block a reader holds is never removed: `begin_remove`
/// succeeds only on an unpinned block and makes later `pin`s fail; `end_remove` then erases it.
class block_catalog {
public:
  /// RAII pin: the block cannot be removed while a lease on it lives. Movable, not copyable.
  class lease {
  public:
    lease() = default;
    lease(block_catalog* owner, block_key key) : owner_(owner), key_(key) {
      // nop
    }
    lease(lease&& other) noexcept : owner_(other.owner_), key_(other.key_) { other.owner_ = nullptr; }
    lease& operator=(lease&& other) noexcept;
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { reset(); }

    /// True while the lease holds a pin.
    explicit operator bool() const { return owner_ != nullptr; }

    /// Drops the pin early.
    void reset();

  private:
    block_catalog* owner_ = nullptr;
    block_key key_;
  };

  /// Adds a block, or refreshes a known one (LRU and `last_use_ms`); true if it was new.
  bool insert(const block_meta& meta);

  /// Marks a use at `now_ms` (moves the block to the most recently used end); false if unknown.
  bool touch(const block_key& key, int64_t now_ms);

  /// The block's metadata; `nullopt` if unknown.
  std::optional<block_meta> find(const block_key& key) const;

  /// Pins a known block that is not being removed; an empty lease otherwise.
  lease acquire(const block_key& key);

  /// Starts removing a block: true if it is known, unpinned and not already being removed.
  bool begin_remove(const block_key& key);

  /// Ends a `begin_remove`: erases the entry if `removed`, else makes it usable again.
  void end_remove(const block_key& key, bool removed);

  /// Erases an unpinned entry whose bytes disappeared behind our back (found missing by a read).
  void forget(const block_key& key);

  /// Visits blocks from the least recently used on; `held` is true for pinned or removing blocks.
  /// Stops when `fn` returns false. Holds the catalog lock: `fn` must not call back into it.
  void for_each_lru(const std::function<bool(const block_meta& meta, bool held)>& fn) const;

  /// Total bytes of all blocks.
  uint64_t bytes() const;

  /// Number of blocks.
  std::size_t size() const;

private:
  struct entry {
    block_meta meta;
    uint32_t pins = 0;
    bool removing = false;
  };
  using lru_list = std::list<entry>; // front = most recently used

  void release(const block_key& key);

  mutable std::mutex mtx_;
  lru_list lru_;
  std::unordered_map<block_key, lru_list::iterator, block_key_hash> index_;
  uint64_t bytes_ = 0;
};

} // namespace deepinfer::kv
