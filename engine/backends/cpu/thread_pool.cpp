#include "engine/backends/cpu/thread_pool.hpp"

namespace deepinfer::engine {

namespace {
thread_local int tls_index = 0;
}

thread_pool::thread_pool(int threads) {
  for (int i = 1; i < threads; ++i)
    threads_.emplace_back([this, i] { work(i); });
}

thread_pool::~thread_pool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_)
    t.join();
}

int thread_pool::current_index() {
  return tls_index;
}

void thread_pool::drain() {
  for (int64_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1))
    (*job_)(i);
}

void thread_pool::work(int index) {
  tls_index = index;
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_)
        return;
      seen = generation_;
      ++busy_;
    }
    drain();
    {
      std::lock_guard lock(mutex_);
      --busy_;
    }
    done_.notify_one();
  }
}

void thread_pool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  if (threads_.empty() || n <= 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    n_ = n;
    next_.store(0);
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock lock(mutex_);
  // Workers that never woke for this generation will find no work left; wait only for the busy.
  done_.wait(lock, [&] { return busy_ == 0 && next_.load() >= n_; });
  job_ = nullptr;
}

} // namespace deepinfer::engine
