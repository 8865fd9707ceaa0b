#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace deepinfer::engine {

/// Whether a prefill is computing anywhere on this machine, across processes (issue 21): the
/// prefill ranks of every process hold a `busy_scope` around each step, and a vision rank's
/// encoder pauses between its blocks while one is held (`prefill_yield`).
///
/// Why: on a machine where encoders share the cores with prefill ranks, `SCHED_IDLE` gives a
/// waking prefill thread its core at once, but an encoder on the other core keeps streaming
/// through the shared caches and memory meanwhile; a short prompt's prefill, itself bound by
/// memory (a one-row lm_head streams the whole vocabulary), then takes longer. Only pausing the
/// encoders while the prefill computes removes that; on vision machines of their own the signal
/// is never busy and nothing pauses.
///
/// POSIX shared memory (`/dev/shm/<name>`, mode 0600): a slot per process holding its pid and
/// how many of its scopes are open, and a futex word the encoders sleep on. A process killed
/// inside a step leaves its slot busy; a waiter clears the slot of a process that no longer
/// exists (`kill(pid, 0)`: processes in another PID namespace sharing the segment would look
/// gone, so the segment is per user and machine, not meant to cross containers).
class host_prefill_signal {
public:
  /// `/deepinfer-prefill-<uid>`: every process of this user on this machine.
  static std::string default_name();

  /// Maps segment `name` (made when absent) and claims this process's slot. On failure (no
  /// /dev/shm, a segment of another layout, every slot held by a live process) `error` says
  /// why and the result is null.
  static std::shared_ptr<host_prefill_signal> open(const std::string& name, std::string& error);

  ~host_prefill_signal();
  host_prefill_signal(const host_prefill_signal&) = delete;
  host_prefill_signal& operator=(const host_prefill_signal&) = delete;

  /// Marks this process as prefilling until destroyed (nestable, any thread). Movable; a
  /// default-constructed scope marks nothing.
  class busy_scope {
  public:
    busy_scope() = default;
    explicit busy_scope(host_prefill_signal* s);
    busy_scope(busy_scope&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    busy_scope& operator=(busy_scope&& o) noexcept;
    ~busy_scope();
    /// Whether it marks something.
    explicit operator bool() const { return s_ != nullptr; }

  private:
    host_prefill_signal* s_ = nullptr;
  };
  [[nodiscard]] busy_scope busy() { return busy_scope{this}; }

  /// Whether some process's scope is open (a few relaxed loads; no system call).
  [[nodiscard]] bool busy_now() const;

  /// Waits until no scope is open on the machine, or `limit` has passed. True when none is.
  bool wait_idle(std::chrono::nanoseconds limit);

  /// The slots (processes) the segment holds.
  static constexpr int slots = 64;

private:
  struct segment;
  host_prefill_signal(segment* seg, int slot, std::string name);
  void enter();
  void leave();
  /// Frees the slots of processes that no longer exist; true when one was busy.
  bool clear_dead_slots();

  segment* seg_;
  int slot_;
  std::string name_;
};

/// A vision encoder's side of the signal: `pause_point()` between blocks of work waits while a
/// prefill computes on the machine, at most `max_pause` at a time; after a wait that ran out it
/// does not pause again for `max_pause`, so encoders keep at least about half the time under a
/// prefill load that never stops (images are not starved). Thread-safe: an encode's backend
/// workers call it from their own blocks.
class prefill_yield {
public:
  /// `signal` null or `max_pause` zero: never pauses.
  prefill_yield(std::shared_ptr<host_prefill_signal> signal, std::chrono::nanoseconds max_pause)
    : signal_(std::move(signal)), max_pause_(max_pause) {}

  void pause_point();

  /// Time spent paused so far (all threads together).
  [[nodiscard]] std::chrono::nanoseconds paused() const { return std::chrono::nanoseconds{paused_ns_.load()}; }

private:
  std::shared_ptr<host_prefill_signal> signal_;
  std::chrono::nanoseconds max_pause_;
  /// steady_clock time (ns) before which a pause point does not wait (after a wait ran out).
  std::atomic<int64_t> run_until_ns_{0};
  std::atomic<int64_t> paused_ns_{0};
};

} // namespace deepinfer::engine
