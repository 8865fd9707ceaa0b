#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "balancers/serving_router.hpp"

namespace deepinfer::actors {

namespace http {
class metrics_registry;
}

/// The latest per-rank loads one balancer actor placed (it writes after every change; /metrics
/// reads a copy from the HTTP threads).
class balancer_loads {
public:
  void set(std::vector<balancers::serving_router::rank_load> loads) {
    std::lock_guard<std::mutex> guard{mtx_};
    loads_ = std::move(loads);
  }
  std::vector<balancers::serving_router::rank_load> get() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return loads_;
  }

private:
  mutable std::mutex mtx_;
  std::vector<balancers::serving_router::rank_load> loads_;
};

/// Exports the balancers' loads as gauges labelled by instance and rank:
/// `deepinfer_prefill_queue_requests`, `deepinfer_prefill_queue_quota_seconds`,
/// `deepinfer_decode_router_requests`, `deepinfer_decode_router_kv_tokens` and
/// `deepinfer_decode_router_kv_capacity_tokens`.
void export_balancer_loads(http::metrics_registry& m, std::shared_ptr<const balancer_loads> prefill,
                           std::shared_ptr<const balancer_loads> decode);

} // namespace deepinfer::actors
