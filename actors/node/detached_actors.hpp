#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_control_block.hpp>

namespace deepinfer::actors {

/// The node's detached actors (the ranks with an engine, the structured-output compiler), held
/// weakly, so that a stop can wait until CAF lets go of them.
///
/// Why: CAF 0.17's actor system destructor stops the middleman and the scheduler first and only
/// then waits for the detached actors' threads, and such a thread ends only when its actor is
/// *destroyed* (no strong reference left), not when it terminates. A rank that remote nodes hold
/// a handle of is monitored by the middleman's BASP broker, and its last messages (the down
/// message it sends that broker as it terminates, tokens to a node that stopped first) name it as
/// their sender: when the middleman stops before it has handled them, they are never released,
/// and the process hangs in the destructor. On the chaos test's 4-process cluster one node's stop
/// hung so in 6 runs of 9 (a gdb dump: the main thread in await_detached_threads, a rank's thread
/// in await_self_destroyed, exactly one strong reference left); waiting here first, while the
/// middleman still runs, none hung in 24 runs: most waits ended within 50 ms, two ran out the
/// stop's deadline, and the destructor then finished.
class detached_actors {
public:
  void add(const caf::actor_addr& a) {
    std::lock_guard guard{mtx_};
    actors_.push_back(a);
  }

  /// How many are still referenced (terminated or not); forgets those that are gone.
  std::size_t held() {
    std::lock_guard guard{mtx_};
    std::erase_if(actors_, [](const caf::actor_addr& a) { return !caf::actor_cast<caf::strong_actor_ptr>(a); });
    return actors_.size();
  }

  /// Waits until none is referenced, or `limit` passed; what is still held then.
  std::size_t wait_released(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto n = held();
      if (n == 0 || std::chrono::steady_clock::now() >= until)
        return n;
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
  }

private:
  std::mutex mtx_;
  std::vector<caf::actor_addr> actors_;
};

} // namespace deepinfer::actors
