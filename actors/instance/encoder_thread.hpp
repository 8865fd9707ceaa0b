#pragma once

#include <functional>
#include <future>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "engine/thread_priority.hpp"
#include "kv/thread_pool.hpp"

namespace deepinfer::actors {

/// A vision rank's encoder thread (issue 21). It runs at the vision ranks' lowered priority
/// (`[vision] scheduling`, `nice`) and loads the rank's engine, so the engine's own threads
/// inherit that priority; then it encodes the rank's images one after another. Only these
/// threads yield the CPU: the rank's actor and the CAF worker under it keep theirs and stay free
/// for other messages while an image encodes. A job reports back by message.
class encoder_thread {
public:
  explicit encoder_thread(const engine::thread_priority& priority) : worker_(1) {
    run_and_wait([&] { priority_error_ = engine::lower_this_thread(priority); });
  }
  /// Lets the running encode finish, drops the queued ones, joins the thread.
  ~encoder_thread() { worker_.discard_queued(); }
  encoder_thread(const encoder_thread&) = delete;
  encoder_thread& operator=(const encoder_thread&) = delete;

  /// What the OS refused when the thread lowered its priority (it then runs at the process's).
  [[nodiscard]] const std::optional<std::string>& priority_error() const { return priority_error_; }

  /// Runs `task` on the thread and waits for its result (the engine's load).
  template <class F>
  std::invoke_result_t<F&> run_and_wait(F&& task) {
    std::packaged_task<std::invoke_result_t<F&>()> job{std::forward<F>(task)};
    auto done = job.get_future();
    worker_.submit([&job] { job(); });
    return done.get();
  }

  /// Queues `task` behind the ones already posted.
  void post(std::function<void()> task) { worker_.submit(std::move(task)); }

private:
  kv::thread_pool worker_;
  std::optional<std::string> priority_error_;
};

} // namespace deepinfer::actors
