#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace deepinfer::actors {

/// Admission control of an entrypoint (issue 14): a request runs only when the prefill ranks
/// have room for its uncached prompt tokens and the decode ranks for one more sequence; until
/// then it waits in a bounded line, and it is refused (429 / 529 with Retry-After) when the line
/// is full or it waited past the queue timeout, before any compute is spent on it.
///
/// Limits scale with the live ranks the caller reports. A request alone in the prefill queue is
/// always admitted, however long its prompt (else it could never run). Waiters are served in
/// arrival order, except that a later one that fits may go ahead of one that does not until the
/// head has waited half the queue timeout (so short prompts do not queue behind a long one, and
/// the long one is not starved). Thread-safe; no CAF.
class admission_control : public std::enable_shared_from_this<admission_control> {
public:
  struct config {
    /// Uncached prompt tokens admitted to prefill and not yet prefilled, per live prefill rank.
    int64_t prefill_tokens_per_rank = 65536;
    /// Requests admitted and not yet finished, per live decode rank.
    int64_t decode_sequences_per_rank = 256;
    /// Most requests waiting for admission; past it a new request is refused at once.
    std::size_t max_waiting = 256;
    /// Longest wait in line; a request still waiting then is refused.
    std::chrono::milliseconds queue_timeout{30000};
  };

  /// What an admitted request holds: its prompt tokens until `prefilled()`, its sequence until
  /// it is destroyed (the request ended, whichever way).
  class ticket {
  public:
    ticket(std::shared_ptr<admission_control> owner, int64_t tokens) : owner_(std::move(owner)), tokens_(tokens) {}
    ~ticket();
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;
    /// The prefill answered: its tokens leave the prefill queue (idempotent).
    void prefilled();

  private:
    std::shared_ptr<admission_control> owner_;
    int64_t tokens_;
    bool sequence_held_ = true;
  };

  /// One request in line; `ticket` is set when it is admitted (then `notify` has run).
  struct waiter {
    int64_t tokens = 0;
    std::chrono::steady_clock::time_point since;
    std::function<void()> notify;
    std::unique_ptr<admission_control::ticket> ticket;
  };

  enum class outcome : uint8_t { admitted, queued, refused };

  struct decision {
    outcome what = outcome::refused;
    /// Set for `admitted`.
    std::unique_ptr<admission_control::ticket> ticket;
    /// Set for `queued`: `notify` runs (on another thread, outside any lock) once its ticket is in.
    std::shared_ptr<waiter> place;
  };

  /// Admits a request of `tokens` uncached prompt tokens now, queues it, or refuses it (line
  /// full). `prefill_ranks` and `decode_ranks` are the live ranks now (at least 1 is assumed).
  static decision request(const std::shared_ptr<admission_control>& self, int64_t tokens, int64_t prefill_ranks,
                          int64_t decode_ranks, std::function<void()> notify);

  /// Leaves the line (queue timeout, client gone). False when it was admitted meanwhile: then
  /// `place->ticket` is set and the caller owns it.
  bool withdraw(const std::shared_ptr<waiter>& place);

  /// Seconds a refused client should wait before trying again (the recent queue wait, 1 at least).
  int64_t retry_after_seconds() const;

  using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

  /// `clock` is steady_clock::now unless a test drives time.
  explicit admission_control(config cfg, clock_fn clock = [] { return std::chrono::steady_clock::now(); })
    : cfg_(cfg), clock_(std::move(clock)) {}

  const config& limits() const noexcept { return cfg_; }

  /// Current use, for metrics and tests.
  struct usage {
    int64_t prefill_tokens = 0;
    int64_t sequences = 0;
    std::size_t waiting = 0;
  };
  usage current() const;

private:
  bool fits(int64_t tokens) const;
  void release(int64_t tokens, bool sequence);
  /// Admits waiters that now fit and returns them: the caller notifies them once unlocked (a
  /// waiter nobody else holds any more releases its ticket, which locks again).
  std::vector<std::shared_ptr<waiter>> pump(std::chrono::steady_clock::time_point now);
  static void wake(std::vector<std::shared_ptr<waiter>> admitted);

  config cfg_;
  clock_fn clock_;
  mutable std::mutex mtx_;
  int64_t prefill_cap_ = 0;
  int64_t sequence_cap_ = 0;
  int64_t prefill_tokens_ = 0;
  int64_t sequences_ = 0;
  std::deque<std::shared_ptr<waiter>> line_;
  double recent_wait_s_ = 0;
};

} // namespace deepinfer::actors
