#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv/block_catalog.hpp"
#include "kv/check_index.hpp"
#include "kv/clock.hpp"
#include "kv/gc.hpp"
#include "kv/lru_ttl_policy.hpp"
#include "kv/swa_store.hpp"

namespace deepinfer::balancers::sim {

/// The simulator's KV cache, made of kv/'s own classes in virtual time (DESIGN §8): CHECK
/// (`kv::check_index`) over the block store's metadata (`kv::block_catalog`), its GC
/// (`kv::gc` with the production `kv::lru_ttl_policy`: LRU under a watermark, TTL per traffic
/// class) and the SWA snapshot store (`kv::swa_store`), all on one `kv::manual_clock` that
/// follows the simulated time. Blocks carry no bytes: each counts 1 toward the watermarks, so the
/// capacity is in blocks, and snapshots are empty (memory is not bounded in the model).
///
/// Blocks are used as the live prefix cache uses them: a lookup touches the blocks it hits (a
/// prefill reads them), a store writes only the blocks not stored yet.
class kv_cache {
public:
  struct config {
    int64_t capacity_blocks = 20'000'000;
    double ttl_s = 3.0 * 86400.0; ///< block TTL (all simulated traffic is the agent class)
    double swa_ttl_s = 180.0;     ///< SWA snapshot TTL (DESIGN §4.2)
  };

  explicit kv_cache(const config& cfg);

  /// Number of leading blocks of `chain` stored at `now` (CHECK); touches them.
  int64_t match(std::span<const uint64_t> chain, double now);

  /// Stores the blocks of `chain` not stored yet; GC evicts down to 90 % of the capacity when
  /// the store goes over it. The first `known` blocks are taken as stored without asking CHECK
  /// (the caller's hit or earlier store: at production scale the asking is most of the run time).
  void insert(std::span<const uint64_t> chain, double now, std::size_t known = 0);

  /// Records a snapshot of the window ending after block `key`.
  void put_snapshot(uint64_t key, double now);

  /// Whether a live snapshot ends after block `key`.
  bool has_snapshot(uint64_t key, double now);

  /// Drops expired blocks and snapshots (call now and then).
  void collect(double now);

  /// Blocks stored now.
  int64_t size() const { return static_cast<int64_t>(catalog_.size()); }

  /// Snapshots held now (expired ones count until collected).
  std::size_t snapshots() const { return swa_.size(); }

private:
  /// The simulated time on the shared clock (ms).
  int64_t at(double now);
  static kv::block_key key_of(uint64_t id) { return kv::block_key{id, 0}; }

  config cfg_;
  std::shared_ptr<kv::manual_clock> clock_;
  kv::check_index index_;
  kv::block_catalog catalog_;
  kv::lru_ttl_policy policy_;
  kv::gc gc_;
  kv::swa_store swa_;
  std::vector<kv::block_key> keys_; ///< scratch: the chain being looked up
};

} // namespace deepinfer::balancers::sim
