#pragma once

// The clock both engine benches time with. With --cpu-time a bench runs on one core (engine and
// OpenBLAS) and reads the process CPU clock, which the other jobs of a shared machine do not
// inflate; otherwise wall time.

#include <chrono>
#include <ctime>

namespace deepinfer::bench {

/// Set from --cpu-time before any timing.
inline bool use_cpu_time = false;

/// Seconds on the chosen clock.
inline double clock_now() {
  if (use_cpu_time) {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Seconds since `t0` (a `clock_now()` value).
inline double seconds_since(double t0) {
  return clock_now() - t0;
}

} // namespace deepinfer::bench
