#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "actors/control/live_instances.hpp"

namespace deepinfer::actors {

/// The entrypoint's prefill router (DESIGN §6.1, its rank rule): every request goes to the prefill
/// rank, over every rank of every running prefill instance, with the least outstanding
/// compute-quota (the fitted cost of its uncached tokens, balancers::cost_model). No prefix
/// affinity: every rank reads every prefix from the shared store. Thread-safe; a lease holds its
/// quota on the rank until it is destroyed (prefill answered, failed or abandoned).
class prefill_load {
public:
  /// One prefill counted on one rank; releases on destruction.
  class lease {
  public:
    lease(std::shared_ptr<prefill_load> table, std::size_t slot, double quota)
      : table_(std::move(table)), slot_(slot), quota_(quota) {
      // nop
    }
    ~lease() { table_->release(slot_, quota_); }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;

    std::string instance() const;
    uint32_t rank() const;

  private:
    std::shared_ptr<prefill_load> table_;
    std::size_t slot_;
    double quota_;
  };

  /// One rank's outstanding work, for metrics and tests.
  struct slot_load {
    std::string instance;
    uint32_t rank = 0;
    int64_t requests = 0;
    double quota_s = 0.0;
  };

  /// The rank of `live` with the least outstanding quota (ties: fewest requests, then the first);
  /// nullptr when `live` has no rank.
  static std::unique_ptr<lease> assign(const std::shared_ptr<prefill_load>& self,
                                       std::span<const live_instance> live, double quota_s);

  /// The load of every rank ever seen (a copy).
  std::vector<slot_load> snapshot() const;

private:
  void release(std::size_t slot, double quota);

  mutable std::mutex mtx_;
  std::vector<slot_load> slots_;
};

} // namespace deepinfer::actors
