#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deepinfer::recipe {

/// A few worker threads that each run one shared task when asked, without the caller waiting
/// for them: the caller takes part in the work itself and, because a worker can be descheduled
/// on a busy machine, never depends on a worker to finish (the task must keep its own data
/// alive, e.g. through a shared_ptr it captures). The destructor joins the workers.
class thread_pool {
public:
  /// `workers` threads (0: `start` never starts anything).
  explicit thread_pool(std::size_t workers);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Runs `task` once on every idle worker; returns how many workers took it (0 when all are
  /// still busy with an earlier task).
  std::size_t start(const std::function<void()>& task);

  /// Number of worker threads.
  std::size_t size() const noexcept { return threads_.size(); }

private:
  void worker_loop(std::size_t self);

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::function<void()>> tasks_; // per worker: the task to run, empty when idle
  bool stop_ = false;
};

} // namespace deepinfer::recipe
