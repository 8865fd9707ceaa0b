#include "recipe/tokenizer/thread_pool.hpp"

namespace deepinfer::recipe {

thread_pool::thread_pool(std::size_t workers) {
  threads_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i)
    threads_.emplace_back([this] { worker_loop(); });
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

bool thread_pool::try_run(std::size_t n, const std::function<void(std::size_t)>& fn) {
  std::unique_lock run_lock{run_mutex_, std::try_to_lock};
  if (!run_lock.owns_lock())
    return false;
  if (n == 0)
    return true;
  {
    std::lock_guard lock{mutex_};
    job_ = &fn;
    job_size_ = n;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock lock{mutex_};
  done_.wait(lock, [&] { return finished_ == job_size_; });
  job_ = nullptr;
  return true;
}

void thread_pool::drain() {
  std::unique_lock lock{mutex_};
  while (job_ != nullptr && next_ < job_size_) {
    const std::size_t i = next_++;
    const auto* fn = job_;
    lock.unlock();
    (*fn)(i);
    lock.lock();
    if (++finished_ == job_size_)
      done_.notify_all();
  }
}

void thread_pool::worker_loop() {
  std::size_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock{mutex_};
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_)
        return;
      seen = generation_;
    }
    drain();
  }
}

} // namespace deepinfer::recipe
