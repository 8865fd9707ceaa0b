// Transport between two nodes over loopback: round trip of a small typed request and throughput
// of 1 MiB payloads through CAF (BASP over TCP), side by side with raw TCP in the same run.
//
//   bench_caf_transport [--policy sharing|stealing] [--rtt-iters N] [--mib M] [--window W]
//
// The process forks: the child is node B (a rank actor published on a port, plus a raw TCP
// server), the parent is node A (the client). Both use the same system settings.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/instance/rank.hpp"
#include "actors/node/system_config.hpp"

using namespace deepinfer::actors;
using clk = std::chrono::steady_clock;

namespace {

struct options {
  std::string policy = "sharing";
  int rtt_iters = 5000;
  int mib = 256;
  int window = 8;
};

// -- raw TCP reference -------------------------------------------------------------------------

bool read_full(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    auto r = ::read(fd, p, n);
    if (r <= 0)
      return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_full(int fd, const void* buf, size_t n) {
  auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    auto r = ::write(fd, p, n);
    if (r <= 0)
      return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

/// Length-prefixed messages; the server answers each with an 8-byte reply (its length).
void raw_server(int listen_fd) {
  int fd = ::accept(listen_fd, nullptr, nullptr);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::vector<char> buf;
  uint64_t len = 0;
  while (read_full(fd, &len, sizeof(len))) {
    buf.resize(len);
    if (!read_full(fd, buf.data(), len) || !write_full(fd, &len, sizeof(len)))
      break;
  }
  ::close(fd);
}

int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 200 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

struct percentiles {
  double p50_us, p99_us;
};

percentiles summarize(std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

// -- the two nodes -----------------------------------------------------------------------------

system_settings settings_for(const options& o) {
  system_settings s;
  s.scheduler_policy = o.policy;
  return s;
}

/// Node B: publishes one rank actor and serves the raw TCP reference until its parent is done.
[[noreturn]] void run_server(const options& o, uint16_t caf_port, int raw_listen_fd, int ready_fd) {
  std::thread raw{[=] { raw_server(raw_listen_fd); }};
  auto cfg = make_actor_system_config(settings_for(o));
  caf::actor_system sys{*cfg};
  rank_config rc;  // no model: an idle rank that answers ping and sink
  rc.generation = 1;
  auto rank = spawn_rank(sys, rc);
  auto port = sys.middleman().publish(rank, caf_port, "127.0.0.1", true);
  char ok = port ? 1 : 0;
  write_full(ready_fd, &ok, 1);
  raw.join();  // the parent closes the raw connection last, when it is done
  caf::anon_send_exit(rank, caf::exit_reason::user_shutdown);
  std::_Exit(0);
}

void run_client(const options& o, uint16_t caf_port, uint16_t raw_port) {
  auto cfg = make_actor_system_config(settings_for(o));
  caf::actor_system sys{*cfg};
  auto rank = sys.middleman().remote_actor<rank_actor>("127.0.0.1", caf_port);
  if (!rank) {
    std::fprintf(stderr, "cannot reach node B: %s\n", sys.render(rank.error()).c_str());
    std::exit(1);
  }
  int raw = raw_connect(raw_port);
  caf::scoped_actor self{sys};
  const size_t mib = size_t{1} << 20;

  // 1. Round trip of a small typed request (ping -> rank_status) vs a 16-byte raw exchange.
  std::vector<double> caf_us, raw_us;
  for (int i = 0; i < o.rtt_iters + 200; ++i) {
    auto t0 = clk::now();
    self->request(*rank, std::chrono::seconds(5), caf::ping_atom::value).receive(
      [](rank_status&) {}, [&](caf::error& e) { std::fprintf(stderr, "%s\n", sys.render(e).c_str()); });
    auto t1 = clk::now();
    uint64_t len = 8, payload = 42;
    write_full(raw, &len, 8);
    write_full(raw, &payload, 8);
    read_full(raw, &len, 8);
    auto t2 = clk::now();
    if (i >= 200) {  // warm-up
      caf_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      raw_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    }
  }
  auto c = summarize(caf_us);
  auto r = summarize(raw_us);
  std::printf("policy=%s rtt_small  caf p50=%.1fus p99=%.1fus | raw_tcp p50=%.1fus p99=%.1fus\n",
              o.policy.c_str(), c.p50_us, c.p99_us, r.p50_us, r.p99_us);

  // 2. Push 1 MiB payloads (sink -> size), `window` in flight, vs raw TCP with the same framing.
  byte_payload block;
  block.bytes.assign(mib, 0x5a);
  auto t0 = clk::now();
  int sent = 0, done = 0;
  while (done < o.mib) {
    while (sent < o.mib && sent - done < o.window) {
      self->send(*rank, sink_atom::value, block);
      ++sent;
    }
    self->receive([&](uint64_t) { ++done; });
  }
  double caf_s = std::chrono::duration<double>(clk::now() - t0).count();
  std::vector<char> raw_block(mib, 0x5a);
  t0 = clk::now();
  for (int i = 0; i < o.mib; ++i) {
    uint64_t len = mib;
    write_full(raw, &len, 8);
    write_full(raw, raw_block.data(), mib);
    read_full(raw, &len, 8);
  }
  double raw_s = std::chrono::duration<double>(clk::now() - t0).count();
  std::printf("policy=%s push_1MiB  caf %.0f MB/s (window %d) | raw_tcp %.0f MB/s (window 1)\n",
              o.policy.c_str(), o.mib * mib / caf_s / 1e6, o.window, o.mib * mib / raw_s / 1e6);
  ::close(raw);
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--policy")
      o.policy = argv[i + 1];
    else if (k == "--rtt-iters")
      o.rtt_iters = std::atoi(argv[i + 1]);
    else if (k == "--mib")
      o.mib = std::atoi(argv[i + 1]);
    else if (k == "--window")
      o.window = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--policy sharing|stealing] [--rtt-iters N] [--mib M] [--window W]\n", argv[0]);
      return 2;
    }
  }
  // Ports: the kernel picks the raw one; the CAF one is found the same way, then released.
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::listen(lfd, 1);
  socklen_t len = sizeof(addr);
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  uint16_t raw_port = ntohs(addr.sin_port);
  int tmp = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a2{};
  a2.sin_family = AF_INET;
  a2.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(tmp, reinterpret_cast<sockaddr*>(&a2), sizeof(a2));
  len = sizeof(a2);
  ::getsockname(tmp, reinterpret_cast<sockaddr*>(&a2), &len);
  uint16_t caf_port = ntohs(a2.sin_port);
  ::close(tmp);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0)
    return 1;
  auto pid = ::fork();
  if (pid == 0)
    run_server(o, caf_port, lfd, pipe_fds[1]);
  char ok = 0;
  read_full(pipe_fds[0], &ok, 1);
  if (!ok) {
    std::fprintf(stderr, "node B could not listen\n");
    return 1;
  }
  run_client(o, caf_port, raw_port);
  ::waitpid(pid, nullptr, 0);
  return 0;
}
