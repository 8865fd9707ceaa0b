// An expert-parallel group's life: a rank that dies mid-step fails the group without leaving
// the others waiting, and ranks without requests take part in steps when woken.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

#include <boost/test/unit_test.hpp>

#include "engine/testing/ep_test_run.hpp"

namespace deepinfer::engine {

using namespace testing;

BOOST_AUTO_TEST_SUITE(expert_parallel_lifecycle)

BOOST_AUTO_TEST_CASE(a_failed_group_releases_the_ranks_waiting_in_a_step) {
  // Rank 1 dies while rank 0 is in a decode step that waits for it: the supervisor fails the
  // group, rank 0's step ends (failed) instead of waiting forever, and rank 0 carries on in a
  // group of its own with the same bits for a request started over.
  auto g2 = std::make_unique<ep_group>(model_config::tiny(), group_config(2));
  for (int r = 0; r < 2; ++r)
    engine(r).join_ep_group(g2->rank(r));
  ep_run run(engines(2));
  run.prefill(g2.get(), {{0}, {1}});
  std::optional<ep_step_stats> st;
  std::thread rank0([&] {
    run.decode(nullptr, {{0}}, 1); // only rank 0 steps (no lockstep driver)
    st = g2->rank(0).end_step();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  g2->fail();
  rank0.join();
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->failed);
  BOOST_TEST(g2->rank(0).failed());
  BOOST_TEST(g2->rank(1).end_step().failed);
  run.forget(0);
  run.forget(1);
  ep_group g1(model_config::tiny(), group_config(1));
  engine(0).join_ep_group(g1.rank(0));
  g2.reset();
  ep_run again({&engine(0)});
  again.prefill(&g1, {{0, 1, 2, 3, 4, 5}});
  again.decode(&g1, {{0, 1, 2, 3, 4, 5}}, decode_steps);
  require_identical(again.logits(), "EP1 after the failure");
}

BOOST_AUTO_TEST_CASE(ranks_without_requests_step_only_when_woken) {
  // Rank 0 alone has requests and steps by itself; ranks 1 and 2 run a step only when their
  // wake arrives, like a rank actor that sends itself a step message from the wake function.
  ep_group group(model_config::tiny(), group_config(3));
  for (int r = 0; r < 3; ++r)
    engine(r).join_ep_group(group.rank(r));
  struct mailbox {
    std::mutex mtx;
    std::condition_variable cv;
    std::deque<int64_t> wakes;
  };
  std::vector<mailbox> boxes(3);
  for (int r = 1; r < 3; ++r)
    group.rank(r).set_wake([&, r](int64_t step) {
      auto& b = boxes[static_cast<std::size_t>(r)];
      std::lock_guard g{b.mtx};
      b.wakes.push_back(step);
      b.cv.notify_one();
    });
  const int steps = 2 + decode_steps;
  std::atomic<int64_t> stale{0}, woken{0};
  std::vector<std::thread> idle;
  for (int r = 1; r < 3; ++r)
    idle.emplace_back([&, r] {
      auto& b = boxes[static_cast<std::size_t>(r)];
      while (group.rank(r).steps() < steps) {
        std::unique_lock lk{b.mtx};
        if (!b.cv.wait_for(lk, std::chrono::seconds(60), [&] { return !b.wakes.empty(); }))
          return; // the check below fails
        const int64_t step = b.wakes.front();
        b.wakes.pop_front();
        lk.unlock();
        if (step <= group.rank(r).steps()) {
          ++stale;
          continue;
        }
        ++woken;
        group.rank(r).end_step();
      }
    });
  // Rank 0's own steps: its two prefills, then its batched decode.
  for (int s = 0; s < 2; ++s) {
    auto& e = engine(0);
    prefill_request pr;
    pr.seq = sequence_id{900 + static_cast<uint64_t>(s)};
    pr.tokens = prompts()[static_cast<std::size_t>(s)];
    pr.sampling.max_tokens = 1 << 20;
    auto p = e.prefill(pr);
    BOOST_REQUIRE(p.status == engine_status::ok);
    BOOST_TEST(std::memcmp(p.logits.data(), reference()[static_cast<std::size_t>(s)][0].data(), p.logits.size() * 4) == 0);
    group.rank(0).end_step();
  }
  std::vector<sequence_id> ids{sequence_id{900}, sequence_id{901}};
  for (int k = 0; k < decode_steps; ++k) {
    std::vector<float> lg;
    auto outs = engine(0).decode_step(ids, &lg);
    const auto v = static_cast<std::size_t>(engine(0).model().vocab_size);
    for (std::size_t i = 0; i < 2; ++i)
      BOOST_TEST(std::memcmp(lg.data() + i * v, reference()[i][static_cast<std::size_t>(k) + 1].data(), v * 4) == 0);
    group.rank(0).end_step();
  }
  for (auto& t : idle)
    t.join();
  for (auto id : ids)
    engine(0).free(id);
  BOOST_TEST(group.rank(1).steps() == steps);
  BOOST_TEST(group.rank(2).steps() == steps);
  BOOST_TEST(woken.load() == 2 * steps);
}

BOOST_AUTO_TEST_CASE(a_rank_that_sets_its_wake_late_is_woken_for_a_step_already_started) {
  // Rank 0 starts a step while rank 1 is still loading (no wake set yet): setting the wake then
  // calls it at once with that step, so rank 1 joins instead of leaving rank 0 waiting.
  ep_group group(model_config::tiny(), group_config(2));
  std::thread rank0([&] { group.rank(0).end_step(); });
  // Called from this thread (set late) or from rank 0's (set before it started).
  std::atomic<int64_t> woken{0};
  for (int i = 0; i < 250 && woken.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    group.rank(1).set_wake([&](int64_t step) { woken.store(step); });
  }
  if (woken.load() == 0)
    group.fail(); // never woken: release rank 0, the checks below fail
  BOOST_TEST(woken.load() == 1);
  group.rank(1).end_step();
  rank0.join();
  BOOST_TEST(group.rank(0).steps() == 1);
  BOOST_TEST(group.rank(1).steps() == 1);
  // Once both ended it, a wake set again is not called: no step is open.
  bool called = false;
  group.rank(1).set_wake([&](int64_t) { called = true; });
  BOOST_TEST(!called);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace deepinfer::engine
