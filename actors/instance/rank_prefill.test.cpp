// The prefill rank runs its jobs in budgeted chunks (engine::prefill_scheduler) with their block
// fetches on an I/O thread: a short prompt behind a long one is answered first, chunking changes
// no output, and a job cancelled mid-prefill (by id, or its requester gone) gives its pool
// blocks back. Real engine, tiny model.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/errors.hpp"
#include "actors/http/metrics_registry.hpp"
#include "kv/prefix_cache.hpp"
#include "actors/instance/rank.hpp"
#include "actors/testing/test_system_config.hpp"
#include "engine/model/model_config.hpp"
#include "engine/testing/test_models.hpp"

using namespace deepinfer;
using namespace deepinfer::actors;
using namespace std::chrono_literals;

namespace {

using system_config = testing::test_system_config;

std::vector<int32_t> tokens(std::size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t)
    x = static_cast<int32_t>(rng() % static_cast<uint64_t>(engine::model_config::tiny().vocab_size));
  return t;
}

struct fixture {
  system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};

  /// A rank with the tiny model whose prefill steps have `step_ms` of budget.
  rank_actor spawn(double step_ms, std::shared_ptr<http::metrics_registry> metrics = nullptr,
                   std::shared_ptr<kv::prefix_cache> cache = nullptr, int64_t kv_blocks = 128) {
    rank_engine_config e;
    e.model_dir = engine::testing::tiny_model_dir();
    e.kv_blocks = kv_blocks;
    e.prefill_step_ns = step_ms * 1e6;
    e.metrics = std::move(metrics);
    e.instance = "t/prefill";
    e.cache = std::move(cache);
    return spawn_rank(sys, rank_config{0, 1, 0, e});
  }

  /// A job of `tokens` (greedy, `max_tokens`) answered to this test; decoded by `decode`.
  prefill_job job(uint64_t id, std::vector<int32_t> tokens, int32_t max_tokens,
                  const rank_actor& decode = {}) {
    prefill_job j;
    j.id = id;
    j.tokens = std::move(tokens);
    j.sampling.max_tokens = max_tokens;
    j.decode_rank = caf::actor_cast<caf::strong_actor_ptr>(decode);
    j.sink = caf::actor_cast<caf::strong_actor_ptr>(self);
    return j;
  }

  prefill_result result() {
    prefill_result r;
    self->receive([&](prefill_result& x) { r = std::move(x); },
                  caf::after(60s) >> [] { BOOST_FAIL("no prefill result"); });
    return r;
  }

  uint64_t steps(const rank_actor& r) {
    uint64_t n = 0;
    self->request(r, 30s, caf::ping_atom::value)
      .receive([&](rank_status& s) { n = s.steps; },
               [&](caf::error& e) { BOOST_FAIL("ping failed: " << sys.render(e)); });
    return n;
  }

  /// First token and every decoded token of a job this test sent (decode on a rank).
  std::vector<int32_t> generated() {
    auto r = result();
    BOOST_REQUIRE_MESSAGE(!r.error, caf::to_string(r.error));
    std::vector<int32_t> out{r.first_token};
    for (bool done = r.finished; !done;)
      self->receive(
        [&](tokens_atom, token_batch& b) {
          BOOST_REQUIRE_MESSAGE(!b.error, caf::to_string(b.error));
          out.insert(out.end(), b.tokens.begin(), b.tokens.end());
          done = b.finished;
        },
        caf::after(60s) >> [&] { BOOST_FAIL("no token batch"); });
    return out;
  }

  /// Step budget (ms) under which a prompt of `n` tokens takes about `steps` steps here and now:
  /// the wall time of one whole-prompt prefill of `n` tokens on a fresh rank (the best of two,
  /// after a warm-up that fits the cost model), over `steps`. Tests size their budgets by it,
  /// not by a speed assumed for some CPU: the engine's speed differs ~5x between our CPUs,
  /// kernels and the load of tests running beside this one.
  double step_ms_for(std::size_t n, double steps) {
    auto whole = spawn(1e9);
    self->send(whole, prefill_atom::value, job(900, tokens(64, 900), 1));
    BOOST_REQUIRE(!result().error);
    double best = 1e18;
    for (uint64_t id = 901; id <= 902; ++id) {
      const auto t0 = std::chrono::steady_clock::now();
      self->send(whole, prefill_atom::value, job(id, tokens(n, id), 1));
      BOOST_REQUIRE(!result().error);
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    stop(whole);
    BOOST_TEST_MESSAGE(n << " tokens prefill in " << best << " ms here: steps of " << best / steps << " ms");
    return best / steps;
  }

  /// Waits until `r` has run a step after its `before`-th (pings are answered between steps).
  /// The deadline only bounds a broken run: the job never got a step.
  void wait_for_step(const rank_actor& r, uint64_t before) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (steps(r) <= before) {
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "rank ran no step past " << before << " within 60 s");
      std::this_thread::sleep_for(1ms);
    }
  }

  void stop(const rank_actor& r) {
    self->send_exit(r, caf::exit_reason::user_shutdown);
    self->wait_for(r);
  }
};

struct temp_root {
  std::filesystem::path path;
  temp_root() {
    std::string pattern = (std::filesystem::temp_directory_path() / "rank_prefill_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~temp_root() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(rank_prefill, fixture)

BOOST_AUTO_TEST_CASE(a_short_prompt_behind_a_long_one_is_answered_first) {
  // Through the block fetcher (an empty prefix cache): both jobs load off the rank's thread.
  temp_root root;
  std::string err;
  auto cache = kv::prefix_cache::open({root.path.string(), "rank-prefill-test"}, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  // 12000 tokens take about twenty steps, so the rank counts the prompt long (over four steps
  // left) until its last few; 100 tokens fit a fraction of one.
  auto r = spawn(step_ms_for(12000, 20), nullptr, cache);
  self->send(r, prefill_atom::value, job(1, tokens(12000, 1), 1));
  self->send(r, prefill_atom::value, job(2, tokens(100, 2), 1));
  auto first = result();
  auto second = result();
  BOOST_TEST(!first.error);
  BOOST_TEST(!second.error);
  BOOST_TEST(first.id == 2u);  // the short one
  BOOST_TEST(second.id == 1u);
  BOOST_TEST(first.finished);  // max_tokens 1: nothing went to a decode rank
  BOOST_TEST(steps(r) >= 5u);  // the long one ran in chunks
  // Cancelled at once (fetching its blocks or queued): answered, and the rank goes on.
  self->send(r, prefill_atom::value, job(3, tokens(4000, 7), 1));
  self->send(r, cancel_atom::value, uint64_t{3});
  auto cancelled = result();
  BOOST_TEST(cancelled.id == 3u);
  BOOST_TEST(deepinfer::actors::error_text(cancelled.error) == "cancelled");
  self->send(r, prefill_atom::value, job(4, tokens(100, 2), 1));
  auto again = result();
  BOOST_TEST(!again.error);
  BOOST_TEST(again.first_token == first.first_token);  // the same short prompt
  stop(r);
}

BOOST_AUTO_TEST_CASE(chunked_prefill_gives_the_unchunked_output) {
  // The rank keeps its steps near the budget in wall time (the fitted cost model, corrected by
  // the steps it measures): about ten steps for this prompt, at least four.
  auto chunked = spawn(step_ms_for(1500, 10));
  auto whole = spawn(1e9);  // one step holds any prompt
  auto prompt = tokens(1500, 3);
  // Prefill only: the chunked rank takes several steps where the other takes one.
  self->send(chunked, prefill_atom::value, job(10, prompt, 1));
  auto c1 = result();
  self->send(whole, prefill_atom::value, job(11, prompt, 1));
  auto w1 = result();
  BOOST_REQUIRE(!c1.error);
  BOOST_REQUIRE(!w1.error);
  BOOST_TEST(c1.first_token == w1.first_token);
  BOOST_TEST(steps(chunked) >= 4u);
  BOOST_TEST(steps(whole) == 1u);
  // Prefill, handoff (each rank to itself) and 8 greedy tokens.
  self->send(chunked, prefill_atom::value, job(12, prompt, 8, chunked));
  auto c = generated();
  self->send(whole, prefill_atom::value, job(13, prompt, 8, whole));
  auto w = generated();
  BOOST_TEST(c.size() == 8u);
  BOOST_TEST(c == w, boost::test_tools::per_element());
  stop(chunked);
  stop(whole);
}

BOOST_AUTO_TEST_CASE(a_job_dropped_mid_prefill_gives_its_pool_blocks_back) {
  auto metrics = std::make_shared<http::metrics_registry>();
  auto r = spawn(step_ms_for(4000, 20), metrics);
  std::vector<std::string> labels{"t/prefill", "0"};
  auto& used = metrics->add_gauge("deepinfer_rank_kv_blocks_used", "", {"instance", "rank"}).with(labels);
  auto& queue = metrics->add_gauge("deepinfer_prefill_rank_queue", "", {"instance", "rank"}).with(labels);
  const double baseline = used.value();
  // Waits until the rank has run a step of the job (pings are answered between steps).
  auto mid_prefill = [&](uint64_t before) {
    wait_for_step(r, before);
    BOOST_TEST(used.value() >= baseline + 4000 / 128);  // the whole prompt is reserved
    BOOST_TEST(queue.value() == 1.0);
  };

  // 1. cancelled by id: 4000 tokens need about twenty steps.
  auto s0 = steps(r);
  self->send(r, prefill_atom::value, job(20, tokens(4000, 4), 1));
  mid_prefill(s0);
  self->send(r, cancel_atom::value, uint64_t{20});
  auto cancelled = result();
  BOOST_TEST(cancelled.id == 20u);
  BOOST_TEST(deepinfer::actors::error_text(cancelled.error) == "cancelled");
  BOOST_TEST(used.value() == baseline);
  BOOST_TEST(queue.value() == 0.0);

  // 2. its requester goes away.
  auto requester = sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](int32_t) {}};
  });
  auto j = job(21, tokens(4000, 5), 1);
  j.sink = caf::actor_cast<caf::strong_actor_ptr>(requester);
  auto s1 = steps(r);
  self->send(r, prefill_atom::value, std::move(j));
  mid_prefill(s1);
  self->send_exit(requester, caf::exit_reason::kill);
  auto gone = result();
  BOOST_TEST(deepinfer::actors::error_text(gone.error) == "the requester is gone");
  BOOST_TEST(used.value() == baseline);
  BOOST_TEST(queue.value() == 0.0);

  // The rank goes on serving.
  self->send(r, prefill_atom::value, job(22, tokens(200, 6), 1));
  BOOST_TEST(!result().error);
  stop(r);
}

BOOST_AUTO_TEST_CASE(jobs_wait_for_pool_room_instead_of_failing) {
  // 40 blocks: each 3000-token prompt reserves 24, so the second waits for the first.
  auto r = spawn(50, nullptr, nullptr, 40);
  self->send(r, prefill_atom::value, job(30, tokens(3000, 8), 1));
  self->send(r, prefill_atom::value, job(31, tokens(3000, 9), 1));
  self->send(r, prefill_atom::value, job(32, tokens(6000, 10), 1));  // 47 blocks: never fits
  std::vector<uint64_t> order;
  std::map<uint64_t, prefill_result> got;
  for (int i = 0; i < 3; ++i) {
    auto x = result();
    order.push_back(x.id);
    got[x.id] = x;
  }
  BOOST_TEST(order.front() == 32u);  // failed at once, not after the others
  BOOST_TEST(!got[30].error);
  BOOST_TEST(!got[31].error);
  BOOST_TEST(deepinfer::actors::error_text(got[32].error) == "kv pool full");
  stop(r);
}

BOOST_AUTO_TEST_CASE(a_rank_failing_mid_prefill_is_seen_by_its_monitor) {
  auto r = spawn(step_ms_for(4000, 20));
  self->monitor(r);
  auto s0 = steps(r);
  self->send(r, prefill_atom::value, job(40, tokens(4000, 11), 1));
  wait_for_step(r, s0);
  // Handled between two steps, long before the prompt is done.
  self->send(r, fail_atom::value, std::string{"test"});
  bool down = false;
  self->receive(
    [&](caf::down_msg& dm) {
      down = dm.source == r.address() && dm.reason.category() == caf::atom("deepinfer")
             && dm.reason.code() == static_cast<uint8_t>(errc::rank_failed);
    },
    caf::after(30s) >> [] {});
  BOOST_TEST(down);
}

BOOST_AUTO_TEST_CASE(the_rank_computes_while_a_job_fetches_its_blocks) {
  temp_root root;
  std::string err;
  auto cache = kv::prefix_cache::open({root.path.string(), "rank-prefill-test"}, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  // Another node's snapshot server that answers only when this test says so.
  struct owner_state {
    caf::response_promise pending;
  };
  auto test = caf::actor_cast<caf::actor>(self);
  auto owner = sys.spawn([test](caf::stateful_actor<owner_state>* o) -> caf::behavior {
    return {
      [=](swa_fetch_atom, kv::block_key) {
        o->state.pending = o->make_response_promise();
        o->send(test, caf::ok_atom::value);
        return o->state.pending;
      },
      [=](caf::ok_atom) {
        byte_payload p;
        p.bytes.assign(64, 1);
        o->state.pending.deliver(std::move(p));
      },
    };
  });
  auto r = spawn(step_ms_for(4000, 20), nullptr, cache);
  auto s0 = steps(r);
  self->send(r, prefill_atom::value, job(50, tokens(4000, 12), 1));
  wait_for_step(r, s0);
  auto b = job(51, tokens(300, 13), 1);
  b.snapshot_end = 256;
  b.snapshot_owner = caf::actor_cast<caf::strong_actor_ptr>(owner);
  self->send(r, prefill_atom::value, std::move(b));
  self->receive([](caf::ok_atom) {}, caf::after(30s) >> [] { BOOST_FAIL("no snapshot fetch"); });
  // Job 51's fetch is pending (the server holds it): the rank answers and computes job 50.
  auto s1 = steps(r);
  BOOST_TEST(steps(r) > s1);
  self->send(owner, caf::ok_atom::value);
  std::map<uint64_t, prefill_result> got;
  for (int i = 0; i < 2; ++i) {
    auto x = result();
    got[x.id] = x;
  }
  BOOST_TEST(!got[50].error);
  BOOST_TEST(!got[51].error);
  // It arrived within the fetch's 500 ms limit: nothing waited for the rank's thread.
  BOOST_TEST(got[51].snapshot_remote);
  self->send_exit(owner, caf::exit_reason::kill);
  stop(r);
}

BOOST_AUTO_TEST_SUITE_END()
