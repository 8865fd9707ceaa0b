#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

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

  size_t size() const { return at_.size(); }

private:
  config cfg_;
  std::unordered_map<uint64_t, double> at_;
};

} // namespace deepinfer::balancers::sim
