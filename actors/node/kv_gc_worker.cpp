#include "actors/node/kv_gc_worker.hpp"

#include <algorithm>

#include "actors/log.hpp"
#include "kv/prefix_cache.hpp"
#include "recipe/base/thread_name.hpp"

namespace deepinfer::actors {

namespace {

http::metrics_registry::family<http::metrics_registry::counter>& removed_family(http::metrics_registry& m) {
  return m.add_counter("deepinfer_kv_gc_removed_total",
                       "KV blocks removed by the store's GC: expired (their traffic class's TTL passed) or "
                       "evicted (least recently used, above the high watermark).",
                       {"reason"});
}

} // namespace

kv_gc_worker::kv_gc_worker(std::shared_ptr<kv::prefix_cache> cache, std::chrono::milliseconds interval,
                           http::metrics_registry& metrics)
    : cache_(std::move(cache)), interval_(interval),
      bytes_(metrics.add_gauge("deepinfer_kv_store_bytes", "Bytes of KV block payloads in this node's store.").with({})),
      expired_(removed_family(metrics).with({"expired"})), evicted_(removed_family(metrics).with({"evicted"})),
      failed_(metrics
                .add_counter("deepinfer_kv_write_failures_total",
                             "KV block writes that failed (the disk full, an I/O error); each such request went on "
                             "without caching that block.")
                .with({})),
      thread_([this] { run(); }) {}

kv_gc_worker::~kv_gc_worker() {
  {
    std::lock_guard g{mtx_};
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void kv_gc_worker::run() {
  name_this_thread("kv.gc");
  std::unique_lock lk{mtx_};
  while (!stop_) {
    lk.unlock();
    const auto r = cache_->run_gc();
    bytes_.set(static_cast<double>(r.bytes_after));
    const auto failed = cache_->failed_writes();
    failed_.inc(static_cast<double>(failed - failed_seen_));
    failed_seen_ = failed;
    expired_.inc(static_cast<double>(r.expired));
    evicted_.inc(static_cast<double>(r.evicted));
    if (r.expired + r.evicted > 0)
      log().info("kv gc: expired={} evicted={} freed_bytes={} store_bytes={} held_by_readers={}", r.expired,
                 r.evicted, r.bytes_freed, r.bytes_after, r.skipped_held);
    lk.lock();
    // A write that found the disk full wakes the next pass early (within 200 ms): blocks keep
    // failing until the GC makes room.
    const auto due = std::chrono::steady_clock::now() + interval_;
    while (!stop_ && std::chrono::steady_clock::now() < due && !cache_->space_pressure())
      cv_.wait_for(lk, std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds{200},
                                                                      due - std::chrono::steady_clock::now()));
  }
}

} // namespace deepinfer::actors
