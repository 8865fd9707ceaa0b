#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace deepinfer::engine {

/// Tells the ranks of an in-process EP group that a step has started: the first rank to start
/// step k (its first MoE round or its `end_step`) calls every other rank's wake function once
/// with k, so a rank without requests joins the step instead of leaving the group waiting. What
/// keeps the rank actors thin: an idle rank's actor runs a step when woken, and ignores a wake
/// for a step it has already ended.
class ep_step_signal {
public:
  explicit ep_step_signal(int ranks) : wakes_(static_cast<std::size_t>(ranks)) {}

  /// Sets rank `rank`'s wake function (called from other ranks' threads); empty: none.
  void set_wake(int rank, std::function<void(int64_t step)> wake) {
    std::lock_guard g{mtx_};
    wakes_[static_cast<std::size_t>(rank)] = std::move(wake);
  }

  /// Rank `by` starts step `step`: wakes the others when it is the first to.
  void started(int64_t step, int by) {
    int64_t seen = started_.load();
    while (seen < step)
      if (started_.compare_exchange_weak(seen, step)) {
        std::lock_guard g{mtx_};
        for (std::size_t r = 0; r < wakes_.size(); ++r)
          if (static_cast<int>(r) != by && wakes_[r])
            wakes_[r](step);
        return;
      }
  }

  /// The latest step any rank has started.
  int64_t started_step() const { return started_.load(); }

private:
  std::atomic<int64_t> started_{0};
  std::mutex mtx_;
  std::vector<std::function<void(int64_t)>> wakes_;
};

} // namespace deepinfer::engine
