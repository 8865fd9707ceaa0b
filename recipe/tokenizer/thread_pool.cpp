#include "recipe/tokenizer/thread_pool.hpp"

namespace deepinfer::recipe {

thread_pool::thread_pool(std::size_t workers) : tasks_(workers) {
  threads_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i)
    threads_.emplace_back([this, i] { worker_loop(i); });
}

thread_pool::~thread_pool() {
  {
    std::lock_guard lock{mutex_};
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_)
    t.join();
}

std::size_t thread_pool::start(const std::function<void()>& task) {
  std::size_t started = 0;
  {
    std::lock_guard lock{mutex_};
    for (auto& slot : tasks_)
      if (!slot) {
        slot = task;
        ++started;
      }
  }
  if (started > 0)
    wake_.notify_all();
  return started;
}

void thread_pool::worker_loop(std::size_t self) {
  std::unique_lock lock{mutex_};
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || tasks_[self]; });
    if (!tasks_[self]) // stopping and idle
      return;
    auto task = tasks_[self];
    lock.unlock();
    task();
    task = nullptr; // drop what the task holds before reporting idle
    lock.lock();
    tasks_[self] = nullptr;
  }
}

} // namespace deepinfer::recipe
