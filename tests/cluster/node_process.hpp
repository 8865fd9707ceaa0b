#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace deepinfer::tests {

/// A child process (a caf-launch node) whose output goes to a log file; killed on destruction.
class node_process {
public:
  node_process(std::vector<std::string> argv, std::string log_path);
  ~node_process();
  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  /// Waits for the process to exit; returns its wait status, or nullopt after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  /// The log so far.
  std::string log() const;

private:
  pid_t pid_ = -1;
  std::string log_path_;
};

/// A free TCP port on 127.0.0.1 (bound once and released).
uint16_t free_port();

/// One HTTP GET on 127.0.0.1:port; returns (status, body) or nullopt when nobody answers within
/// `timeout`.
struct http_reply {
  unsigned status = 0;
  std::string body;
};
std::optional<http_reply> http_get(uint16_t port, const std::string& target,
                                   std::chrono::milliseconds timeout = std::chrono::milliseconds{1000});

/// Deadline for a state a healthy run reaches within seconds but no test promises a time for
/// (nodes up, a restarted node rejoined, sshd listening), sized for a loaded 2-core machine: it
/// only bounds a broken run. Waits whose time is the behaviour under test keep their own.
inline constexpr std::chrono::milliseconds eventually{90000};

/// Polls `pred` every 20 ms until it holds or `timeout` passes; returns the time it took.
template <class Pred>
std::optional<std::chrono::milliseconds> wait_until(Pred pred, std::chrono::milliseconds timeout) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (pred())
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    if (std::chrono::steady_clock::now() - t0 > timeout)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// Whether a Prometheus text body has a sample line that starts with `prefix` and ends with
/// ` value`.
bool has_sample(const std::string& metrics, const std::string& prefix, const std::string& value);

} // namespace deepinfer::tests
