#pragma once

// Tests only: runs a shell command as a user would and keeps what it printed.

#include <cstdio>
#include <string>

#include <sys/wait.h>

namespace deepinfer::testing {

struct command_result {
  /// The exit status (0-255); -1 when it did not exit normally or could not run.
  int status = -1;
  std::string out;
};

/// Runs `cmd` under /bin/sh; stdout is kept, and stderr too with `with_stderr` (else it is
/// dropped).
inline command_result run_command(const std::string& cmd, bool with_stderr = false) {
  command_result r;
  FILE* p = ::popen((cmd + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (p == nullptr)
    return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
    r.out.append(buf, n);
  const int status = ::pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

} // namespace deepinfer::testing
