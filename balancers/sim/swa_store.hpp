#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace deepinfer::balancers::sim {

/// The simulator's model of SWA snapshots (DESIGN §4.2): one entry per prefix (named by the chain
/// id of its last block), alive for a TTL (~180 s). Memory is not bounded in the model.
///
/// NOTE: stand-in for kv/'s swa_directory (branch `kv`).
class swa_store {
public:
  struct config {
    double ttl_s = 180.0;
  };

  explicit swa_store(const config& cfg) : cfg_(cfg) {}

  /// Records a snapshot of the window ending after the block `key` at `now`.
  void put(uint64_t key, double now);

  /// Whether a live snapshot ends after block `key` at `now`.
  bool has(uint64_t key, double now) const;

  /// Drops expired entries (call now and then to bound memory).
  void collect(double now);

  size_t size() const { return size_; }

private:
  // Open addressing with linear probing (key 0 marks an empty slot): millions of snapshots live
  // at once in an hour of agent traffic, and node-based maps spend most of the time in misses.
  struct slot {
    uint64_t key = 0;
    double at = 0.0;
  };
  static uint64_t stored_key(uint64_t key) { return key == 0 ? 1 : key; }
  void rehash(size_t slots, double now, bool drop_expired);

  config cfg_;
  std::vector<slot> table_ = std::vector<slot>(1024);
  size_t size_ = 0;
};

} // namespace deepinfer::balancers::sim
