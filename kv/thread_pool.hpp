#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace deepinfer::kv {

/// A fixed pool of worker threads running jobs in FIFO order; the fallback async I/O engine of
/// the block store. The destructor finishes every queued job, then joins.
class thread_pool {
public:
  /// Starts `threads` workers (at least one), each named `name` (recipe/base/thread_name.hpp).
  explicit thread_pool(std::size_t threads, std::string name = "kv.io");
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Queues `job`.
  void submit(std::function<void()> job);
  /// Drops the queued jobs that have not started (the destructor then only waits for the
  /// running ones).
  void discard_queued();

private:
  void run();

  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

} // namespace deepinfer::kv
