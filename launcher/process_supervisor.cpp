#include "launcher/process_supervisor.hpp"

#include <cerrno>
#include <cstring>
#include <thread>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher/log.hpp"

namespace deepinfer::launcher {

namespace {

std::string describe_status(int status) {
  if (WIFEXITED(status))
    return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string{"signal "} + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

} // namespace

process_supervisor::process_supervisor(config cfg, std::vector<child_spec> children)
  : cfg_(cfg) {
  for (auto& c : children) {
    child ch;
    ch.spec = std::move(c);
    children_.push_back(std::move(ch));
  }
}

bool process_supervisor::start(child& c) {
  std::vector<char*> argv;
  for (auto& a : c.spec.argv)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto parent = ::getpid();
  auto pid = ::fork();
  if (pid < 0) {
    log().error("node={} cannot fork: {}", c.spec.name, std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    // Child: die with the launcher, take signals normally again, then become the node. SIGINT,
    // not SIGTERM: a node's SIGTERM drains it (a decode node decodes on for its grace period).
    ::prctl(PR_SET_PDEATHSIG, SIGINT);
    if (::getppid() != parent)
      ::_exit(1);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "caf-launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  c.pid = pid;
  log().info("node={} started pid={}", c.spec.name, pid);
  return true;
}

void process_supervisor::on_exit(child& c, int status) {
  c.pid = -1;
  bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto why = describe_status(status);
  const bool config_error = WIFEXITED(status) && WEXITSTATUS(status) == config_error_status;
  bool restart = !config_error && (cfg_.policy == restart_policy::always
                                   || (cfg_.policy == restart_policy::on_failure && failed));
  if (config_error) {
    log().error("node={} exited ({}): its configuration cannot serve (the reason is on its stderr above); "
                "not restarting: fix the manifest or the machine, then start it again",
                c.spec.name, why);
    c.finished = true;
    return;
  }
  auto now = std::chrono::steady_clock::now();
  std::erase_if(c.restarts, [&](auto t) { return now - t > std::chrono::minutes(1); });
  if (restart && c.restarts.size() >= cfg_.max_restarts_per_minute) {
    log().error("node={} exited ({}) and was restarted {} times in the last minute; giving up",
                c.spec.name, why, c.restarts.size());
    restart = false;
  }
  if (!restart) {
    (failed ? log().error("node={} exited ({}); not restarting", c.spec.name, why)
            : log().info("node={} exited ({})", c.spec.name, why));
    c.finished = true;
    return;
  }
  log().warn("node={} exited ({}); restarting in {} ms", c.spec.name, why, cfg_.restart_delay.count());
  c.restarts.push_back(now);
  c.restart_at = now + cfg_.restart_delay;
}

void process_supervisor::stop_all() {
  // The whole cluster stops: SIGINT stops each node at once, where SIGTERM would drain a decode
  // node into the others, which are stopping too.
  for (auto& c : children_)
    if (c.pid > 0)
      ::kill(c.pid, SIGINT);
  auto deadline = std::chrono::steady_clock::now() + cfg_.stop_grace;
  for (;;) {
    bool any = false;
    for (auto& c : children_) {
      if (c.pid <= 0)
        continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
        log().info("node={} stopped ({})", c.spec.name, describe_status(status));
        c.pid = -1;
      } else {
        any = true;
      }
    }
    if (!any)
      return;
    if (std::chrono::steady_clock::now() > deadline) {
      for (auto& c : children_)
        if (c.pid > 0) {
          log().warn("node={} did not stop in time; killing it", c.spec.name);
          ::kill(c.pid, SIGKILL);
          ::waitpid(c.pid, nullptr, 0);
          c.pid = -1;
        }
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int process_supervisor::run() {
  for (auto& c : children_)
    if (!start(c))
      c.finished = true;
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  int exit_code = 0;
  for (;;) {
    // 1. Reap.
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0)
      for (auto& c : children_)
        if (c.pid == pid) {
          on_exit(c, status);
          if (c.finished && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            exit_code = WIFEXITED(status) && WEXITSTATUS(status) == config_error_status ? config_error_status : 1;
        }
    // 2. Restart what is due.
    auto now = std::chrono::steady_clock::now();
    bool alive = false;
    for (auto& c : children_) {
      if (c.pid < 0 && !c.finished && now >= c.restart_at)
        if (!start(c))
          c.finished = true;
      alive |= !c.finished;
    }
    if (!alive)
      return exit_code;
    // 3. Wait for a stop signal, polling children every 50 ms.
    timespec tick{0, 50'000'000};
    int sig = ::sigtimedwait(&stop_signals, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM || (sig == SIGHUP && !cfg_.forward_hangup)) {
      log().info("received {}; stopping {} node(s)", strsignal(sig), children_.size());
      stop_all();
      return 0;
    }
    if (sig == SIGHUP) // each node reloads its API keys file
      for (auto& c : children_)
        if (c.pid > 0)
          ::kill(c.pid, SIGHUP);
  }
}

} // namespace deepinfer::launcher
