#pragma once

// The rank's recent busy intervals, so a job can be told how long it sat in the rank's mailbox
// while the rank's thread ran something else (a step, another job's start): the `rank_busy` part
// of its requester's Server-Timing. Pure (no CAF); times are microseconds of the system clock,
// the one clock a message's sender and receiver share (exactly on one machine, up to the clocks'
// sync across machines).

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace deepinfer::actors {

class busy_log {
public:
  /// Microseconds since the Unix epoch (system clock).
  static int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
  }

  /// Records the thread busy for its lifetime: from its construction to its end. Scopes nest
  /// (a job's start that runs a step): only the outermost records, so no time counts twice.
  class scope {
  public:
    explicit scope(busy_log& log) : log_(log), begin_(now_us()) { ++log_.depth_; }
    ~scope() {
      if (--log_.depth_ == 0)
        log_.record(begin_, now_us());
    }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    /// When it began (microseconds since the Unix epoch).
    int64_t begin() const { return begin_; }

  private:
    busy_log& log_;
    int64_t begin_;
  };

  /// The thread was busy from `begin` to `end` (oldest intervals drop out past `capacity`).
  void record(int64_t begin, int64_t end) {
    if (end <= begin)
      return;
    intervals_[next_ % capacity] = {begin, end};
    ++next_;
  }

  /// How much of [from, to] the recorded intervals cover (they never overlap: one thread).
  int64_t overlap(int64_t from, int64_t to) const {
    int64_t sum = 0;
    const auto n = std::min<std::size_t>(next_, capacity);
    for (std::size_t k = 0; k < n; ++k) {
      const auto& [b, e] = intervals_[k];
      sum += std::max<int64_t>(0, std::min(e, to) - std::max(b, from));
    }
    return sum;
  }

  /// Intervals kept: enough for a job's wait behind the steps and job starts ahead of it.
  static constexpr std::size_t capacity = 64;

private:
  struct interval {
    int64_t begin = 0;
    int64_t end = 0;
  };
  std::array<interval, capacity> intervals_{};
  std::size_t next_ = 0;
  int depth_ = 0;
};

} // namespace deepinfer::actors
