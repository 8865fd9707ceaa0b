#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

namespace deepinfer::engine {

/// Adds the calling thread's CPU time between its construction and destruction to a counter, ns
/// (the forward's per-stage breakdown: CPU time, so other processes on a shared machine do not
/// inflate it; a clock read costs ~0.2 us, a timed stage is tens of microseconds or more).
class stage_timer {
public:
  explicit stage_timer(std::atomic<int64_t>& into) : into_(into), t0_(now()) {}
  ~stage_timer() { into_.fetch_add(now() - t0_, std::memory_order_relaxed); }
  stage_timer(const stage_timer&) = delete;
  stage_timer& operator=(const stage_timer&) = delete;

private:
  static int64_t now() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
  }
  std::atomic<int64_t>& into_;
  int64_t t0_;
};

} // namespace deepinfer::engine
