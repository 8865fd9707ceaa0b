#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deepinfer::recipe {

/// A tiny fork-join pool: `run(n, fn)` calls fn(0..n-1) on the workers and the calling thread
/// and returns when all calls are done. One `run` at a time; `try_run` reports a busy pool so the
/// caller can do the work itself instead of waiting.
class thread_pool {
public:
  /// `workers` extra threads (0: `run` executes everything on the caller).
  explicit thread_pool(std::size_t workers);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Runs fn(i) for i in [0, n); false (and nothing run) when another `run` is in progress.
  bool try_run(std::size_t n, const std::function<void(std::size_t)>& fn);

  /// Number of threads that take part in a run, the caller included.
  std::size_t concurrency() const noexcept { return threads_.size() + 1; }

private:
  void worker_loop();
  void drain();

  std::vector<std::thread> threads_;
  std::mutex run_mutex_; // held for the duration of one run
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t job_size_ = 0;
  std::size_t next_ = 0;     // next index to hand out
  std::size_t finished_ = 0; // indices completed
  std::size_t generation_ = 0;
  bool stop_ = false;
};

} // namespace deepinfer::recipe
