#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

#include "actors/log.hpp"
#include "recipe/base/thread_name.hpp"

namespace deepinfer::actors {

/// A stop that hangs says where: every `every` until it is dismissed, logs the phase the stop is
/// in and how long it has taken (a node that never exits after a drain is otherwise a silent
/// process its supervisor kills).
class stop_watchdog {
public:
  stop_watchdog(std::string node, std::chrono::milliseconds every) {
    thread_ = std::thread([this, node = std::move(node), every] {
      name_this_thread("node.watchdog");
      const auto t0 = std::chrono::steady_clock::now();
      std::unique_lock lock{mtx_};
      while (!cv_.wait_for(lock, every, [&] { return dismissed_; }))
        log().warn("node={} stop still in phase '{}' after {} ms (running actors at the last count: {})", node,
                   phase_, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count(),
                   running_);
    });
  }
  ~stop_watchdog() {
    {
      std::lock_guard guard{mtx_};
      dismissed_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void enter(const char* phase, std::size_t running) {
    std::lock_guard guard{mtx_};
    phase_ = phase;
    running_ = running;
  }

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  bool dismissed_ = false;
  const char* phase_ = "http";
  std::size_t running_ = 0;
  std::thread thread_;
};

} // namespace deepinfer::actors
