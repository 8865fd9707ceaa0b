#pragma once

#include "kv/block_key.hpp"

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace deepinfer::kv {

/// Identifies a node (process) of the cluster.
struct node_id {
  uint32_t value = 0;
  friend bool operator==(const node_id&, const node_id&) = default;
};

/// One shard of the SWA directory: which node holds the snapshot ending at each block key, and
/// until when. Plain data, not thread-safe: one actor owns one shard.
class swa_directory_shard {
public:
  /// Records that `owner` holds the snapshot ending at `key` until `expires_ms`.
  void record(const block_key& key, node_id owner, int64_t expires_ms);

  /// The owner of a live snapshot ending at `key`; `nullopt` if none (expired entries are dropped).
  std::optional<node_id> lookup(const block_key& key, int64_t now_ms);

  /// Drops the entry for `key`; false if absent.
  bool forget(const block_key& key);

  /// Drops every entry owned by `owner` (the node died); returns how many.
  std::size_t forget_node(node_id owner);

  /// Drops expired entries; returns how many.
  std::size_t expire(int64_t now_ms);

  /// Number of entries.
  std::size_t size() const { return entries_.size(); }

private:
  struct entry {
    node_id owner;
    int64_t expires_ms = 0;
  };
  std::unordered_map<block_key, entry, block_key_hash> entries_;
};

} // namespace deepinfer::kv
