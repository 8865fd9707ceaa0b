#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "actors/http/metrics_registry.hpp"

namespace deepinfer::kv {
class prefix_cache;
}

namespace deepinfer::actors {

/// The KV store's lifecycle on a kvstore node (DESIGN §4.1): a thread that runs
/// `prefix_cache::run_gc` every `interval` (expired blocks by traffic class, then LRU down to
/// the low watermark when above the high one), off every rank and actor thread, and exports
/// `deepinfer_kv_store_bytes`, `deepinfer_kv_gc_removed_total{reason}` and
/// `deepinfer_kv_write_failures_total`. A write that found the disk full runs a pass at once
/// (it evicts a tenth of the store). Stops (joins) when destroyed.
class kv_gc_worker {
public:
  kv_gc_worker(std::shared_ptr<kv::prefix_cache> cache, std::chrono::milliseconds interval,
               http::metrics_registry& metrics);
  ~kv_gc_worker();
  kv_gc_worker(const kv_gc_worker&) = delete;
  kv_gc_worker& operator=(const kv_gc_worker&) = delete;

private:
  void run();

  std::shared_ptr<kv::prefix_cache> cache_;
  std::chrono::milliseconds interval_;
  http::metrics_registry::gauge& bytes_;
  http::metrics_registry::counter& expired_;
  http::metrics_registry::counter& evicted_;
  http::metrics_registry::counter& failed_;
  uint64_t failed_seen_ = 0;
  std::mutex mtx_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

} // namespace deepinfer::actors
