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

/// A thread at a lowered CPU priority (`[vision] scheduling`, `nice`; issue 21) for the image
/// work that shares cores with the text path, so that it yields them to text requests:
/// - a vision rank's encoder: it loads the rank's engine on this thread (the engine's own
///   threads inherit the priority), then encodes the rank's images one after another;
/// - an entrypoint's large request bodies (inline images): parsed here, not on a CAF worker.
/// Only these threads yield the CPU: the actor and the CAF worker under it keep theirs and stay
/// free for other messages meanwhile. A job reports back by message.
class lowered_thread {
public:
  /// `name` labels the thread (recipe/base/thread_name.hpp): "vision.encode", "http.parse".
  lowered_thread(const engine::thread_priority& priority, std::string name) : worker_(1, std::move(name)) {
    run_and_wait([&] { priority_error_ = engine::lower_this_thread(priority); });
  }
  /// Lets the running job finish, drops the queued ones, joins the thread.
  ~lowered_thread() { worker_.discard_queued(); }
  lowered_thread(const lowered_thread&) = delete;
  lowered_thread& operator=(const lowered_thread&) = delete;

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
