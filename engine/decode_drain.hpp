#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace deepinfer::engine {

/// A decode rank's drain (DESIGN §3, issue 17): after the drain notice it decodes on for the
/// grace period, then offers every sequence it still holds for a handoff to another decode
/// instance (all at once, then again every `retry` for those no other rank could take), and is
/// drained once it holds none. Decisions only: the rank actor keeps the sequences, sends the
/// offers and moves the KV. Every call takes the time, so tests drive it with a manual clock.
class decode_drain {
public:
  using clock = std::chrono::steady_clock;

  struct config {
    /// A sequence no other rank took (every one full, or none runs) decodes here again and is
    /// offered anew this long after its last offer.
    std::chrono::milliseconds retry{1000};
    /// A rank that is empty at the notice still waits this long (at most the grace) before it
    /// calls itself drained: KV that prefill ranks placed before the routers heard of the drain
    /// may still be on its way here.
    std::chrono::milliseconds settle{500};
  };

  explicit decode_drain(const config& cfg) : cfg_(cfg) {
    // nop
  }

  /// The drain notice at `now`: decode on for `grace` (0: hand off at once). A later notice can
  /// bring the handoff forward, never put it off.
  void notice(clock::time_point now, std::chrono::milliseconds grace);

  /// True once a notice came.
  bool noticed() const { return deadline_.has_value(); }

  /// True from the end of the grace period on: sequences are to leave.
  bool handing_off(clock::time_point now) const { return deadline_ && now >= *deadline_; }

  /// Whether to offer sequence `id` for a handoff now (past the grace, and not offered within
  /// `retry`); true records the offer.
  bool offer(uint64_t id, clock::time_point now);

  /// Sequence `id` left the rank (finished, cancelled, handed off): no more offers for it.
  void forget(uint64_t id) { offered_.erase(id); }

  /// True when the drain is complete: noticed, past the settle time (or the grace, when
  /// shorter), and the rank holds no sequence (`sequences` == 0).
  bool drained(clock::time_point now, std::size_t sequences) const;

  /// When the rank should look again: the end of the grace period before it, then the earliest
  /// retry of an offered sequence (nullopt: nothing is due, or no notice came).
  std::optional<clock::time_point> next_check(clock::time_point now) const;

private:
  config cfg_;
  std::optional<clock::time_point> noticed_at_;
  std::optional<clock::time_point> deadline_;
  /// Sequence id -> when it was last offered.
  std::map<uint64_t, clock::time_point> offered_;
};

} // namespace deepinfer::engine
