#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deepinfer::engine {

/// A fixed set of worker threads that run one `parallel_for` at a time; the caller works too.
class thread_pool {
public:
  /// `threads` counts the caller: 1 means no extra thread.
  explicit thread_pool(int threads);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Runs fn(i) for i in [0, n) across the workers; returns when all are done.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);
  int size() const { return static_cast<int>(threads_.size()) + 1; }
  /// The calling thread's index in [0, size()): 0 for the caller, 1.. for workers.
  static int current_index();

private:
  void work(int index);
  void drain();
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  int busy_ = 0;
  /// Bumped (under mutex_) for every parallel_for; atomic so idle workers can watch it spinning.
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
};

} // namespace deepinfer::engine
