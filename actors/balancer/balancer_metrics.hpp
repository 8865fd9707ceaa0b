#pragma once

#include <algorithm>
#include <cstdint>
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

/// What the prefill balancer saw arrive since the last look (the autoscaler's inputs, DESIGN
/// §6.5): uncached prompt tokens submitted, and how long each pulled job waited in the queue.
/// The balancer writes, the controller reads (`take`) once per autoscaler interval.
class prefill_demand {
public:
  struct window {
    int64_t missed_tokens = 0;
    double queue_p90_s = 0.0; ///< of the jobs pulled in the window; 0 when none
    std::size_t pulled = 0;
  };

  void submitted(int64_t missed_tokens) {
    std::lock_guard<std::mutex> guard{mtx_};
    missed_ += std::max<int64_t>(missed_tokens, 0);
  }
  void pulled(double waited_s) {
    std::lock_guard<std::mutex> guard{mtx_};
    waits_.push_back(waited_s);
  }
  /// The window since the last call, and a new one begins.
  window take() {
    std::lock_guard<std::mutex> guard{mtx_};
    window w{missed_, 0.0, waits_.size()};
    if (!waits_.empty()) {
      auto at = waits_.begin() + static_cast<std::ptrdiff_t>((waits_.size() - 1) * 9 / 10);
      std::nth_element(waits_.begin(), at, waits_.end());
      w.queue_p90_s = *at;
    }
    missed_ = 0;
    waits_.clear();
    return w;
  }

private:
  std::mutex mtx_;
  int64_t missed_ = 0;
  std::vector<double> waits_;
};

/// Exports the balancers' loads as gauges labelled by instance and rank:
/// `deepinfer_prefill_queue_requests`, `deepinfer_prefill_queue_quota_seconds`,
/// `deepinfer_decode_router_requests`, `deepinfer_decode_router_kv_tokens` and
/// `deepinfer_decode_router_kv_capacity_tokens`.
void export_balancer_loads(http::metrics_registry& m, std::shared_ptr<const balancer_loads> prefill,
                           std::shared_ptr<const balancer_loads> decode);

} // namespace deepinfer::actors
