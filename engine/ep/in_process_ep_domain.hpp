#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/ep/ep_transport.hpp"
#include "engine/ep/replica_mover.hpp"

namespace deepinfer::engine {

/// The communication domain of an EP group whose ranks are threads of one process (the CPU
/// backend): each rank's endpoint publishes a pointer to what it sends, everyone passes a
/// barrier, each copies what is addressed to it, and a second barrier lets the senders reuse
/// their buffers. Replica moves work the same way.
class in_process_ep_domain {
public:
  /// A domain of `ranks` endpoints. Precondition: ranks >= 1.
  explicit in_process_ep_domain(int ranks);
  ~in_process_ep_domain();
  in_process_ep_domain(const in_process_ep_domain&) = delete;
  in_process_ep_domain& operator=(const in_process_ep_domain&) = delete;

  int ranks() const { return static_cast<int>(published_.size()); }
  /// Rank `rank`'s exchange endpoint (used by that rank's thread only).
  ep_transport& transport(int rank);
  /// Rank `rank`'s replica mover (used by that rank's thread only).
  replica_mover& mover(int rank);

  /// Fails the group (any thread, e.g. the supervisor when a rank died): every collective
  /// returns false from now on, those already waiting too.
  void fail();
  bool failed() const;

private:
  class endpoint;
  friend class endpoint;
  /// The barrier (spins and yields briefly, then sleeps on the futex): false when the group failed.
  bool wait();
  std::atomic<int> arrived_{0};
  /// Ranks waiting in an all_to_all that sends rows (endpoint::peers_wait_with_rows).
  std::atomic<int> rows_waiting_{0};
  /// Barrier generation x 2, plus 1 once the group failed (one word, so a failure wakes the
  /// sleepers like a completed barrier does).
  std::atomic<uint64_t> state_{0};
  /// What each rank published for the exchange in progress.
  std::vector<const std::vector<ep_buffer>*> published_;
  std::vector<std::span<const replica_send>> published_sends_;
  std::vector<std::unique_ptr<endpoint>> endpoints_;
};

} // namespace deepinfer::engine
