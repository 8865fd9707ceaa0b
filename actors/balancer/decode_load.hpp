#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "actors/control/live_instances.hpp"
#include "balancers/decode_balancer.hpp"

namespace deepinfer::actors {

/// The entrypoint's view of the load of every decode rank of every decode instance (requests held
/// and KV tokens), and the decode router of DESIGN §6.2 over it. Thread-safe: request actors on
/// any scheduler thread take and drop leases. A lease counts its request on one rank for as long
/// as it lives, so every way a request ends (finished, failed, cancelled, resubmitted) releases it.
class decode_load {
public:
  /// One request counted on one rank; releases on destruction.
  class lease {
  public:
    lease(std::shared_ptr<decode_load> table, std::size_t slot, int64_t kv_tokens)
      : table_(std::move(table)), slot_(slot), kv_tokens_(kv_tokens) {
      // nop
    }
    ~lease() { table_->release(slot_, kv_tokens_); }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;

    /// The instance and rank the router chose.
    std::string instance() const;
    uint32_t rank() const;

  private:
    std::shared_ptr<decode_load> table_;
    std::size_t slot_;
    int64_t kv_tokens_;
  };

  /// One rank's load, for metrics and tests.
  struct slot_load {
    std::string instance;
    uint32_t rank = 0;
    balancers::decode_balancer::rank_state load;
  };

  explicit decode_load(balancers::decode_balancer::config cfg);

  /// Chooses a rank among the healthy ranks of `live` for a request whose KV is `kv_tokens` long
  /// and counts it there; nullptr when there is none or every one is full (retry later).
  static std::unique_ptr<lease> assign(const std::shared_ptr<decode_load>& self,
                                       std::span<const live_instance> live, int64_t kv_tokens);

  /// The load of every rank ever seen (a copy).
  std::vector<slot_load> snapshot() const;

private:
  void release(std::size_t slot, int64_t kv_tokens);

  balancers::decode_balancer router_;
  mutable std::mutex mtx_;
  std::vector<slot_load> slots_;
};

} // namespace deepinfer::actors
