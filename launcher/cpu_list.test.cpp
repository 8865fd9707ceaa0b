#include "launcher/cpu_list.hpp"

#include <condition_variable>
#include <mutex>
#include <sched.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

using namespace deepinfer::launcher;

namespace {

std::vector<int> cpus_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  BOOST_REQUIRE(sched_getaffinity(tid, sizeof set, &set) == 0);
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set))
      out.push_back(c);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cpu_list)

BOOST_AUTO_TEST_CASE(lists_parse_as_the_kernel_writes_them) {
  BOOST_TEST(*parse_cpu_list("0") == std::vector<int>{0});
  BOOST_TEST(*parse_cpu_list("5,0-2,2") == (std::vector<int>{0, 1, 2, 5}));
  BOOST_TEST(cpu_list_text(*parse_cpu_list("7,0-2,4,5")) == "0-2,4-5,7");
  BOOST_TEST(cpu_list_text({}) == "");
  for (const char* bad : {"", ",", "0,", "x", "1-", "-2", "4-2", "0-1-2", " 1", "1024"}) {
    auto r = parse_cpu_list(bad);
    BOOST_TEST(!r.has_value(), bad);
    if (!r)
      BOOST_TEST(!r.error().empty());
  }
}

// The whole process moves: a thread that was already running as well as the caller (each thread
// has its own mask). A CPU the process may not use is refused with the list of those it may.
BOOST_AUTO_TEST_CASE(a_process_is_kept_on_its_cpus_and_told_which_it_may_use) {
  const auto all = cpus_of(0);
  BOOST_REQUIRE(!all.empty());
  std::mutex m;
  std::condition_variable cv;
  bool moved = false;
  pid_t other = 0;
  std::vector<int> other_cpus;
  std::thread t([&] {
    std::unique_lock lock{m};
    other = static_cast<pid_t>(::syscall(SYS_gettid));
    cv.notify_all();
    cv.wait(lock, [&] { return moved; });
    other_cpus = cpus_of(0);
  });
  {
    std::unique_lock lock{m};
    cv.wait(lock, [&] { return other != 0; });
  }
  auto kept = keep_process_on({all.back()});
  {
    std::lock_guard lock{m};
    moved = true;
  }
  cv.notify_all();
  t.join();
  if (!kept)
    BOOST_FAIL("keep_process_on: " + kept.error());
  BOOST_TEST(cpus_of(0) == std::vector<int>{all.back()});
  BOOST_TEST(other_cpus == std::vector<int>{all.back()});
  // Only what the process may use now counts: the CPU it left is refused until it is given back.
  if (all.size() > 1) {
    auto back = keep_process_on(all);
    BOOST_REQUIRE(!back.has_value());
    BOOST_TEST(back.error().find("CPU " + std::to_string(all.front())) != std::string::npos, back.error());
  }
  cpu_set_t every;
  CPU_ZERO(&every);
  for (int c : all)
    CPU_SET(c, &every);
  BOOST_REQUIRE(sched_setaffinity(0, sizeof every, &every) == 0);

  auto refused = keep_process_on({all.back(), 1023});
  BOOST_REQUIRE(!refused.has_value());
  BOOST_TEST(refused.error().find("CPU 1023") != std::string::npos, refused.error());
  BOOST_TEST(refused.error().find(cpu_list_text(all)) != std::string::npos, refused.error());
  BOOST_TEST(cpus_of(0) == all); // nothing changed
}

BOOST_AUTO_TEST_SUITE_END()
