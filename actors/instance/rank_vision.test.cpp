// A vision rank's encodes and the machine's prefill signal (issue 21): a prefill rank marks its
// steps, and a vision rank's encode waits while a prefill computes, then answers the same
// embeddings (and says how long it waited). Real engine, tiny model, real shared memory.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/instance/rank.hpp"
#include "actors/testing/test_system_config.hpp"
#include "engine/host_prefill_signal.hpp"
#include "engine/model/model_config.hpp"
#include "engine/testing/test_models.hpp"

using namespace deepinfer;
using namespace deepinfer::actors;
using namespace std::chrono_literals;

namespace {

struct fixture {
  testing::test_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::string name = "/deepinfer-prefill-test-rank-" + std::to_string(::getpid());
  std::shared_ptr<engine::host_prefill_signal> signal = open();

  ~fixture() { ::shm_unlink(name.c_str()); }

  std::shared_ptr<engine::host_prefill_signal> open() {
    std::string error;
    auto s = engine::host_prefill_signal::open(name, error);
    BOOST_REQUIRE_MESSAGE(s, error);
    return s;
  }

  rank_actor spawn(bool vision) {
    rank_engine_config e;
    e.model_dir = engine::testing::tiny_model_dir();
    e.kv_blocks = vision ? 1 : 64;
    e.instance = vision ? "t/vision" : "t/prefill";
    e.encodes_images = vision;
    e.reads_hits = !vision;
    e.prefill_signal = open(); // another handle on the segment, as another process's would be
    e.prefill_pause = 10s;
    return spawn_rank(sys, rank_config{0, 1, 0, e});
  }

  vision_job image(uint64_t id) {
    const int cell = engine::model_config::tiny().vision.cell();
    vision_job j;
    j.id = id;
    j.width = j.height = 6 * cell;
    j.rgb.resize(static_cast<std::size_t>(j.width) * static_cast<std::size_t>(j.height) * 3);
    std::mt19937 rng(7);
    for (auto& b : j.rgb)
      b = static_cast<uint8_t>(rng());
    return j;
  }

  void stop(const rank_actor& r) {
    self->send_exit(r, caf::exit_reason::user_shutdown);
    self->wait_for(r);
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(rank_vision, fixture)

BOOST_AUTO_TEST_CASE(an_encode_waits_while_a_prefill_computes_on_the_machine) {
  auto vision = spawn(true);
  vision_result alone;
  self->request(vision, 60s, encode_atom::value, image(1))
    .receive([&](vision_result& r) { alone = std::move(r); },
             [&](caf::error& e) { BOOST_FAIL("encode failed: " << sys.render(e)); });
  BOOST_REQUIRE(!alone.error);
  BOOST_TEST(alone.pause_seconds == 0.0);

  // A prefill step opens on the machine; the encode sent now must not finish before it ends.
  auto step = signal->busy();
  self->send(vision, encode_atom::value, image(2));
  self->receive([&](vision_result&) { BOOST_FAIL("the encode ran beside the prefill"); },
                caf::after(300ms) >> [] {});
  step = {};
  vision_result waited;
  self->receive([&](vision_result& r) { waited = std::move(r); },
                caf::after(60s) >> [] { BOOST_FAIL("no encode after the prefill ended"); });
  BOOST_REQUIRE(!waited.error);
  BOOST_TEST(waited.pause_seconds >= 0.25);
  BOOST_TEST(waited.pause_seconds < 5.0); // woken by the step's end, not its 10 s limit
  BOOST_TEST(waited.embedding == alone.embedding);
  stop(vision);
}

BOOST_AUTO_TEST_CASE(a_prefill_rank_marks_its_steps) {
  auto prefill = spawn(false);
  std::mt19937_64 rng(3);
  prefill_job j;
  j.id = 1;
  j.tokens.resize(3000);
  for (auto& t : j.tokens)
    t = static_cast<int32_t>(rng() % 100000);
  j.sampling.max_tokens = 1;
  j.sink = caf::actor_cast<caf::strong_actor_ptr>(self);
  BOOST_TEST(!signal->busy_now());
  self->send(prefill, prefill_atom::value, std::move(j));
  // The prefill (a few hundred ms of steps on any of our CPUs) is seen from this handle.
  bool seen = false, done = false;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    seen = seen || signal->busy_now();
    self->receive([&](prefill_result& r) {
                    BOOST_REQUIRE_MESSAGE(!r.error, caf::to_string(r.error));
                    done = true;
                  },
                  caf::after(0ms) >> [] {});
  }
  BOOST_REQUIRE(done);
  BOOST_TEST(seen);
  // The first token is answered inside the step; its mark closes when the step ends.
  while (signal->busy_now() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  BOOST_TEST(!signal->busy_now());
  stop(prefill);
}

BOOST_AUTO_TEST_SUITE_END()
