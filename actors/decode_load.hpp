#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "balancers/decode_balancer.hpp"

namespace deepinfer::actors {

/// The entrypoint's view of its decode ranks' load (requests held and KV tokens), and the decode
/// router of DESIGN §6.2 over it. Thread-safe: request actors on any scheduler thread take and
/// drop leases. A lease counts its request on one rank for as long as it lives, so every way a
/// request ends (finished, failed, cancelled, resubmitted) releases it.
class decode_load {
public:
  /// One request counted on one rank; releases on destruction.
  class lease {
  public:
    lease(std::shared_ptr<decode_load> table, uint32_t rank, int64_t kv_tokens)
      : table_(std::move(table)), rank_(rank), kv_tokens_(kv_tokens) {
      // nop
    }
    ~lease() { table_->release(rank_, kv_tokens_); }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;

    /// The rank the router chose.
    uint32_t rank() const { return rank_; }

  private:
    std::shared_ptr<decode_load> table_;
    uint32_t rank_;
    int64_t kv_tokens_;
  };

  /// `ranks` decode ranks, all idle.
  decode_load(uint32_t ranks, balancers::decode_balancer::config cfg);

  /// Chooses a rank for a request whose KV is `kv_tokens` long and counts it there; nullopt when
  /// every rank is full (the caller retries later).
  static std::unique_ptr<lease> assign(const std::shared_ptr<decode_load>& self, int64_t kv_tokens);

  /// The current load of every rank (a copy, for metrics and tests).
  std::vector<balancers::decode_balancer::rank_state> snapshot() const;

private:
  void release(uint32_t rank, int64_t kv_tokens);

  balancers::decode_balancer router_;
  mutable std::mutex mtx_;
  std::vector<balancers::decode_balancer::rank_state> ranks_;
};

} // namespace deepinfer::actors
