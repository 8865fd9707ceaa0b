#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace deepinfer::kv {

/// Wall-clock source for TTLs and LRU ages, injected through configs so tests never sleep.
class clock {
public:
  virtual ~clock() = default;

  /// Required. Milliseconds since the Unix epoch.
  virtual int64_t now_ms() const = 0;
};

/// The real clock (`std::chrono::system_clock`), shared by every config that names none.
inline std::shared_ptr<const clock> system_clock() {
  struct real final : clock {
    int64_t now_ms() const override {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
    }
  };
  static const auto instance = std::make_shared<const real>();
  return instance;
}

/// A clock that moves only when told to; for tests and trace replay in virtual time.
class manual_clock final : public clock {
public:
  /// Starts at `start_ms`.
  explicit manual_clock(int64_t start_ms = 0) : now_(start_ms) {
    // nop
  }

  int64_t now_ms() const override { return now_.load(std::memory_order_relaxed); }

  /// Sets the time.
  void set(int64_t ms) { now_.store(ms, std::memory_order_relaxed); }

  /// Moves the time forward by `ms`.
  void advance(int64_t ms) { now_.fetch_add(ms, std::memory_order_relaxed); }

private:
  std::atomic<int64_t> now_;
};

} // namespace deepinfer::kv
