#include "engine/thread_priority.hpp"

#include <cerrno>
#include <cstring>

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace deepinfer::engine {

namespace {

// Linux keeps scheduling attributes per thread: PRIO_PROCESS with a thread id and
// sched_setscheduler with a thread id change that thread only.
pid_t this_thread_id() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

} // namespace

std::optional<std::string> lower_this_thread(const thread_priority& priority) {
  if (priority.idle) {
    const sched_param param{};
    if (::sched_setscheduler(this_thread_id(), SCHED_IDLE, &param) != 0)
      return std::string{"cannot switch the thread to SCHED_IDLE: "} + std::strerror(errno);
    return std::nullopt;
  }
  if (priority.nice > 0 &&
      ::setpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id()), priority.nice) != 0)
    return "cannot lower the thread's priority to nice " + std::to_string(priority.nice) + ": " +
           std::strerror(errno);
  return std::nullopt;
}

thread_priority this_thread_priority() {
  thread_priority p;
  p.idle = ::sched_getscheduler(this_thread_id()) == SCHED_IDLE;
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id()));
  p.nice = errno == 0 ? nice : 0;
  return p;
}

} // namespace deepinfer::engine
