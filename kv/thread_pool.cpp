#include "kv/thread_pool.hpp"

#include "recipe/base/thread_name.hpp"

namespace deepinfer::kv {

thread_pool::thread_pool(std::size_t threads, std::string name) {
  if (threads == 0)
    threads = 1;
  workers_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i)
    workers_.emplace_back([this, name] {
      name_this_thread(name);
      run();
    });
}

thread_pool::~thread_pool() {
  {
    std::lock_guard guard{mtx_};
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& worker : workers_)
    worker.join();
}

void thread_pool::submit(std::function<void()> job) {
  {
    std::lock_guard guard{mtx_};
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void thread_pool::discard_queued() {
  std::lock_guard guard{mtx_};
  jobs_.clear();
}

void thread_pool::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock guard{mtx_};
      cv_.wait(guard, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty())
        return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

} // namespace deepinfer::kv
