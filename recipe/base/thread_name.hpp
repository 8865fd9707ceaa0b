#pragma once

// Thread names for operators: `top -H`, `perf report --sort comm`, gdb and /proc/PID/task/*/comm
// show which thread is a prefill rank, the KV writer or an HTTP worker, instead of one process
// name for all of them (bench/serve/mixed_load.mjs --cpu sums CPU time by these names).

#include <string>
#include <string_view>

#include <pthread.h>

namespace deepinfer {

/// Names the calling thread. Linux keeps 15 bytes, so a longer name keeps its first 15; a name
/// the system refuses leaves the old one (a name is a label, never a reason to fail).
inline void name_this_thread(std::string_view name) noexcept {
  char buf[16] = {};
  name.copy(buf, sizeof buf - 1);
  (void)pthread_setname_np(pthread_self(), buf);
}

} // namespace deepinfer
