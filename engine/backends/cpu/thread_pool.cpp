#include "engine/backends/cpu/thread_pool.hpp"

#include "recipe/base/thread_name.hpp"

#include <chrono>

namespace deepinfer::engine {

namespace {
thread_local int tls_index = 0;
/// How long an idle worker watches for the next loop before it sleeps.
constexpr auto spin = std::chrono::microseconds(100);
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
  name_this_thread("engine.worker");
  tls_index = index;
  uint64_t seen = 0;
  for (;;) {
    // A forward pass runs parallel loops a few tens of microseconds apart: a worker asleep on
    // the condition variable woke too late to take any part of the short ones, so it watches
    // for the next one a little while first.
    const auto spin_until = std::chrono::steady_clock::now() + spin;
    for (int i = 0; generation_.load(std::memory_order_acquire) == seen; ++i) {
      if ((i & 63) == 0 && std::chrono::steady_clock::now() > spin_until)
        break;
      __builtin_ia32_pause();
    }
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
