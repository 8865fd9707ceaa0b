// kv::thread_pool: FIFO on one worker; the destructor finishes queued jobs unless they were
// discarded (what a prefill rank's block fetcher does when the rank goes).
#include "kv/thread_pool.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <vector>

using deepinfer::kv::thread_pool;

BOOST_AUTO_TEST_SUITE(kv_thread_pool)

BOOST_AUTO_TEST_CASE(one_worker_runs_jobs_in_order_and_the_destructor_finishes_them) {
  std::vector<int> order;
  std::mutex mtx;
  {
    thread_pool pool(1);
    for (int i = 0; i < 100; ++i)
      pool.submit([&, i] {
        std::lock_guard guard{mtx};
        order.push_back(i);
      });
  }
  BOOST_REQUIRE(order.size() == 100u);
  for (int i = 0; i < 100; ++i)
    BOOST_TEST(order[static_cast<std::size_t>(i)] == i);
}

BOOST_AUTO_TEST_CASE(discarded_jobs_never_run_the_running_one_finishes) {
  std::promise<void> started, release;
  auto gate = release.get_future().share();
  std::atomic<int> ran{0};
  {
    thread_pool pool(1);
    pool.submit([&] {
      started.set_value();
      gate.wait();
      ++ran;
    });
    for (int i = 0; i < 10; ++i)
      pool.submit([&] { ran += 100; });
    started.get_future().wait(); // the first job holds the worker; the others are queued
    pool.discard_queued();
    release.set_value();
  }
  BOOST_TEST(ran.load() == 1);
}

BOOST_AUTO_TEST_SUITE_END()
