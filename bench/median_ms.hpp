#pragma once

// The hand-timed benches' one timing loop (bench/actors, bench/recipe): wall time of a call,
// repeated, reported as the median so one descheduling on a shared machine does not move it.

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace deepinfer::bench {

/// Median wall-clock milliseconds of `reps` calls of `f` (reps >= 1).
inline double median_ms(int reps, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace deepinfer::bench
