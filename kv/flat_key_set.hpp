#pragma once

#include "kv/block_key.hpp"

#include <cstddef>
#include <vector>

namespace deepinfer::kv {

/// An open-addressing set of block keys (linear probing, backward-shift deletion), keys stored
/// inline: a lookup costs one cache miss, and `prefetch` lets CHECK overlap the misses of a
/// whole chain. Not thread-safe. The all-zero key is kept aside, so every key is allowed.
class flat_key_set {
public:
  /// An empty set.
  flat_key_set();

  /// Adds `key`; false if present.
  bool insert(const block_key& key);

  /// Removes `key`; false if absent.
  bool erase(const block_key& key);

  /// True if present.
  bool contains(const block_key& key) const;

  /// Hints that `contains(key)` follows soon.
  void prefetch(const block_key& key) const {
    __builtin_prefetch(&slots_[slot_of(key)]);
  }

  /// Number of keys.
  std::size_t size() const { return size_ + (has_zero_ ? 1 : 0); }

private:
  static bool empty(const block_key& k) { return k.lo == 0 && k.hi == 0; }
  std::size_t slot_of(const block_key& key) const { return static_cast<std::size_t>(key.lo) & mask_; }
  void grow();

  std::vector<block_key> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  bool has_zero_ = false;
};

} // namespace deepinfer::kv
