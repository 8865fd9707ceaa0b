#pragma once

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "launcher/manifest.hpp"

namespace deepinfer::launcher {

/// The exit status of a node whose configuration cannot serve (a model directory that is not
/// there, a CUDA backend without a device): sysexits.h's EX_CONFIG. The supervisor does not
/// restart it, and the launcher exits with it when nothing else is left.
inline constexpr int config_error_status = 78;

/// One child process to keep running.
struct child_spec {
  std::string name;
  std::vector<std::string> argv;
};

/// Starts node processes and keeps them running under a restart policy, like a tiny init:
/// exited children are restarted after a delay (at most N times a minute); SIGINT/SIGTERM stop
/// every child (SIGINT, then SIGKILL after a grace period: a node's own SIGTERM drains it, which
/// a whole cluster stopping has no use for). Children die with the launcher (PR_SET_PDEATHSIG,
/// SIGINT), so a killed launcher never leaves orphans holding ports. A child that exits with
/// status 0 (a decode node drained by SIGTERM) is not restarted under on_failure, nor one that
/// exits with `config_error_status` (its configuration cannot serve: restarting cannot help).
class process_supervisor {
public:
  struct config {
    restart_policy policy = restart_policy::on_failure;
    std::chrono::milliseconds restart_delay{1000};
    uint32_t max_restarts_per_minute = 10;
    std::chrono::milliseconds stop_grace{3000};
    /// SIGHUP is passed on to every child (they reload their API keys); false: it stops every
    /// child like SIGINT.
    bool forward_hangup = false;
  };

  process_supervisor(config cfg, std::vector<child_spec> children);

  /// Runs until SIGINT/SIGTERM (which the caller must have blocked in every thread) or until no
  /// child is left to run. Returns the launcher's exit status.
  int run();

private:
  struct child {
    child_spec spec;
    pid_t pid = -1;
    std::vector<std::chrono::steady_clock::time_point> restarts;
    std::chrono::steady_clock::time_point restart_at{};
    bool finished = false;
  };

  bool start(child& c);
  void on_exit(child& c, int status);
  void stop_all();

  config cfg_;
  std::vector<child> children_;
};

} // namespace deepinfer::launcher
