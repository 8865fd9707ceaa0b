// The machine's prefill signal (issue 21): a scope opened in one handle is seen through another
// (another process in production: the same shared memory), a waiter wakes when the last scope
// closes, a process killed inside a step does not hold the encoders, and prefill_yield's pauses
// are bounded so that an endless prefill load leaves the encoder about half the time.
#include "engine/host_prefill_signal.hpp"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

using deepinfer::engine::host_prefill_signal;
using deepinfer::engine::prefill_yield;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

/// A segment of this test alone, removed at the end (other test processes may run beside it).
struct named_segment {
  std::string name = "/deepinfer-prefill-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  ~named_segment() { ::shm_unlink(name.c_str()); }
  std::shared_ptr<host_prefill_signal> open() const {
    std::string error;
    auto s = host_prefill_signal::open(name, error);
    BOOST_TEST_INFO(error);
    BOOST_REQUIRE(s);
    return s;
  }
  static inline int counter = 0;
};

} // namespace

BOOST_AUTO_TEST_SUITE(host_prefill_signal_suite)

BOOST_AUTO_TEST_CASE(a_scope_is_seen_through_another_handle_and_its_close_wakes_a_waiter) {
  named_segment seg;
  auto prefill = seg.open(), encoder = seg.open();
  BOOST_TEST(!encoder->busy_now());
  {
    auto outer = prefill->busy();
    BOOST_TEST(encoder->busy_now());
    {
      auto inner = prefill->busy(); // nested: two steps of two ranks of one process
      auto moved = std::move(inner);
    }
    BOOST_TEST(encoder->busy_now()); // the outer one is still open
    const auto t0 = clock_type::now();
    BOOST_TEST(!encoder->wait_idle(30ms)); // runs out while the step computes
    BOOST_TEST((clock_type::now() - t0 >= 30ms));
    std::thread closer{[&] {
      std::this_thread::sleep_for(50ms);
      outer = {};
    }};
    const auto t1 = clock_type::now();
    BOOST_TEST(encoder->wait_idle(10s)); // woken by the close, long before its limit
    const auto waited = clock_type::now() - t1;
    closer.join();
    BOOST_TEST((waited >= 40ms));
    BOOST_TEST((waited < 5s));
  }
  BOOST_TEST(!encoder->busy_now());
  BOOST_TEST(encoder->wait_idle(0ns));
}

BOOST_AUTO_TEST_CASE(a_process_killed_inside_a_step_does_not_hold_the_encoders) {
  named_segment seg;
  auto encoder = seg.open();
  int ready[2];
  BOOST_REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    // The child: a prefill process that opens its scope and is killed inside it.
    std::string error;
    auto mine = host_prefill_signal::open(seg.name, error);
    if (!mine)
      ::_exit(1);
    auto step = mine->busy();
    const char one = 1;
    (void)!::write(ready[1], &one, 1);
    for (;;)
      ::pause();
  }
  ::close(ready[1]);
  char got = 0;
  BOOST_REQUIRE(::read(ready[0], &got, 1) == 1);
  ::close(ready[0]);
  BOOST_TEST(encoder->busy_now());
  ::kill(child, SIGKILL);
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  // Its slot still says busy; the waiter finds its process gone and frees it.
  const auto t0 = clock_type::now();
  BOOST_TEST(encoder->wait_idle(10s));
  BOOST_TEST((clock_type::now() - t0 < 2s));
  BOOST_TEST(!encoder->busy_now());
  // Its slot is free again: with the encoder's, every slot can be held; one more cannot.
  std::vector<std::shared_ptr<host_prefill_signal>> held;
  for (int i = 1; i < host_prefill_signal::slots; ++i)
    held.push_back(seg.open());
  std::string error;
  BOOST_TEST(!host_prefill_signal::open(seg.name, error));
  BOOST_TEST(error.find("slots are held") != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(a_segment_of_another_layout_is_refused_with_what_to_do) {
  named_segment seg;
  const int fd = ::shm_open(seg.name.c_str(), O_RDWR | O_CREAT, 0600);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::ftruncate(fd, 100) == 0);
  ::close(fd);
  std::string error;
  BOOST_TEST(!host_prefill_signal::open(seg.name, error));
  BOOST_TEST(error.find("remove /dev/shm" + seg.name) != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(an_encoder_pauses_while_a_prefill_computes_and_at_most_its_limit_at_a_time) {
  named_segment seg;
  auto prefill = seg.open();
  prefill_yield yield{seg.open(), 40ms};
  yield.pause_point(); // nothing computes: no wait
  BOOST_TEST(yield.paused().count() == 0);

  // A step that ends within the limit: the pause ends with it.
  {
    auto step = prefill->busy();
    std::thread closer{[&] {
      std::this_thread::sleep_for(15ms);
      step = {};
    }};
    const auto t0 = clock_type::now();
    yield.pause_point();
    closer.join();
    const auto took = clock_type::now() - t0;
    BOOST_TEST((took >= 10ms));
    BOOST_TEST((took < 40ms + 200ms));
  }
  const auto after_step = yield.paused();
  BOOST_TEST((after_step >= 10ms));

  // A prefill load that never stops: one pause of the limit, then the encoder runs for as long
  // before it waits again.
  auto endless = prefill->busy();
  auto t0 = clock_type::now();
  yield.pause_point();
  BOOST_TEST((clock_type::now() - t0 >= 40ms));
  t0 = clock_type::now();
  yield.pause_point(); // within the run that follows a wait that ran out
  BOOST_TEST((clock_type::now() - t0 < 20ms));
  std::this_thread::sleep_for(45ms);
  t0 = clock_type::now();
  yield.pause_point(); // the run is over: it waits again
  BOOST_TEST((clock_type::now() - t0 >= 40ms));
  BOOST_TEST((yield.paused() - after_step >= 80ms));

  // Off: no signal, or no limit.
  prefill_yield off{nullptr, 40ms}, zero{seg.open(), 0ms};
  t0 = clock_type::now();
  off.pause_point();
  zero.pause_point();
  BOOST_TEST((clock_type::now() - t0 < 20ms));
  BOOST_TEST(off.paused().count() == 0);
  BOOST_TEST(zero.paused().count() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
