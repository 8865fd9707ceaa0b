#pragma once

#include <optional>
#include <string>

namespace deepinfer::engine {

/// The CPU priority of a thread that shares cores with latency-bound work (Linux scheduling):
/// a vision rank's encoder beside prefill and decode ranks on one machine (issue 21).
struct thread_priority {
  /// SCHED_IDLE: the thread runs only on cycles no normal thread of the machine wants, and a
  /// normal thread that wakes takes its core at once. `nice` does not apply then.
  bool idle = false;
  /// Niceness 0-19 under the normal policy (0: the process's own). A nice thread still takes
  /// its share of the core (about 10 % against a busy thread at nice 10) and a waking thread
  /// can wait for its slice, so it only softens the effect on the other thread's latency.
  int nice = 0;

  [[nodiscard]] bool lowered() const { return idle || nice > 0; }
  bool operator==(const thread_priority&) const = default;
};

/// Applies `priority` to the calling thread; the threads it starts afterwards inherit it. What
/// the OS refused, when it did (the thread then keeps its priority).
std::optional<std::string> lower_this_thread(const thread_priority& priority);

/// The calling thread's priority as the OS reports it (for tests and logs).
thread_priority this_thread_priority();

} // namespace deepinfer::engine
