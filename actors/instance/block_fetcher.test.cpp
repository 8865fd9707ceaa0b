#include "actors/instance/block_fetcher.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace deepinfer::actors;

BOOST_AUTO_TEST_SUITE(block_fetcher_suite)

// A job's plan must not wait behind another job's block reads: the rank waits a moment for it
// when it takes the job, and a read of a long hit takes longer than that.
BOOST_AUTO_TEST_CASE(a_plan_runs_while_an_earlier_jobs_read_is_still_going) {
  block_fetcher fetcher;
  std::promise<void> release_read;
  auto read_may_end = release_read.get_future().share();
  std::promise<void> read_started, second_plan;
  fetcher.plan([&] { fetcher.read([&, read_may_end] { read_started.set_value(); read_may_end.wait(); }); });
  BOOST_REQUIRE(read_started.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  fetcher.plan([&] { second_plan.set_value(); });
  const bool planned = second_plan.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  release_read.set_value();
  BOOST_TEST(planned, "the second job's plan waited for the first job's read");
}

// Reads run in the order their plans posted them, after those plans.
BOOST_AUTO_TEST_CASE(reads_follow_their_plans_in_order) {
  std::vector<int> order;
  std::promise<void> done;
  {
    block_fetcher fetcher;
    for (int job = 0; job < 5; ++job)
      fetcher.plan([&, job] {
        fetcher.read([&, job] {
          order.push_back(job);
          if (job == 4)
            done.set_value();
        });
      });
    BOOST_REQUIRE(done.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  }
  BOOST_TEST(order == (std::vector<int>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
}

// A fetcher that goes (its rank stopped) lets running tasks end and drops what is queued, plans
// and the reads a running plan posts on its way out alike.
BOOST_AUTO_TEST_CASE(going_away_drops_queued_plans_and_reads) {
  std::atomic<int> ran{0};
  std::promise<void> plan_started;
  std::promise<void> release;
  auto may_end = release.get_future().share();
  std::thread releaser;
  {
    block_fetcher fetcher;
    fetcher.plan([&, may_end] {
      plan_started.set_value();
      may_end.wait();
      fetcher.read([&] { ++ran; }); // posted while the fetcher is going away
    });
    for (int i = 0; i < 3; ++i)
      fetcher.plan([&] { ++ran; });
    plan_started.get_future().wait();
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      release.set_value();
    });
  } // the destructor waits for the running plan
  releaser.join();
  BOOST_TEST(ran.load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
