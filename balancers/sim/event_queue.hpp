#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace deepinfer::balancers::sim {

/// Virtual-time event queue: events run in time order, ties in insertion order.
class event_queue {
public:
  /// Schedules `fn` at virtual time `at`.
  void push(double at, std::function<void()> fn) { heap_.push({at, seq_++, std::move(fn)}); }

  /// Runs the earliest event; false when none is left or the next is after `until` (> 0).
  bool run_one(double until) {
    if (heap_.empty() || (until > 0.0 && heap_.top().at > until))
      return false;
    auto ev = std::move(const_cast<event&>(heap_.top()));
    heap_.pop();
    now_ = ev.at;
    ev.fn();
    return true;
  }

  double now() const { return now_; }
  bool empty() const { return heap_.empty(); }

private:
  struct event {
    double at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::priority_queue<event, std::vector<event>, std::greater<>> heap_;
  uint64_t seq_ = 0;
  double now_ = 0.0;
};

} // namespace deepinfer::balancers::sim
