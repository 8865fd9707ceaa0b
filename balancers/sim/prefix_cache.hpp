#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace deepinfer::balancers::sim {

/// The simulator's model of the persistent block KV store (DESIGN §4.1): block ids of a hash chain,
/// a capacity in blocks evicted least-recently-used, and a TTL.
///
/// Stored as a radix tree of runs of chained block ids, so a lookup of a 600-block prompt costs a
/// few node visits and one linear compare instead of 600 hash-map probes. Eviction runs in batches
/// when the capacity is exceeded: least-recently-used leaves first, down to 90 % of the capacity
/// (a block whose descendant is alive is always at least as recently used, so leaves go first).
///
/// NOTE: the simulator's stand-in for kv/'s check_index + GC (branch `kv`): swap `match` for
/// `check_index::longest_prefix` and the eviction for kv's LRU/TTL strategy once they are merged.
class prefix_cache {
public:
  struct config {
    int64_t capacity_blocks = 20'000'000;
    double ttl_s = 3.0 * 86400.0; ///< agent traffic class default
  };

  explicit prefix_cache(const config& cfg);
  ~prefix_cache();
  prefix_cache(const prefix_cache&) = delete;
  prefix_cache& operator=(const prefix_cache&) = delete;

  /// Number of leading blocks of `chain` stored and not expired at `now`; refreshes them.
  int64_t match(std::span<const uint64_t> chain, double now);

  /// Stores (or refreshes) every block of `chain`, then evicts down to the capacity.
  void insert(std::span<const uint64_t> chain, double now);

  /// Blocks stored now (expired ones count until they are collected).
  int64_t size() const { return size_; }

private:
  struct node;
  node* child(node* parent, uint64_t key, double now);
  node* split(node* n, size_t at);
  void evict(double now);
  void remove_leaf(node* n);
  void drop_subtree(node* n);

  config cfg_;
  std::unique_ptr<node> root_;
  int64_t size_ = 0;
};

} // namespace deepinfer::balancers::sim
