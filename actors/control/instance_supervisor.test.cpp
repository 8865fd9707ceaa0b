#include "actors/control/instance_supervisor.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/errors.hpp"
#include "actors/testing/test_system_config.hpp"

using namespace deepinfer::actors;

namespace {

/// A deterministic actor system: nothing runs until the test calls `run()`.
struct fixture {
  testing::test_system_config cfg{true};
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  caf::scoped_actor self{sys};

  void run() {
    // Deliver everything, including the supervisor's delayed restart message.
    do {
      sched.run();
    } while (sched.trigger_timeouts() > 0);
  }

  instance_status status_of(const instance_supervisor_actor& sup) {
    self->send(sup, status_atom::value);
    run();
    instance_status result;
    self->receive([&](instance_status& s) { result = std::move(s); },
                  caf::after(std::chrono::seconds(5)) >> [] { BOOST_FAIL("supervisor did not answer"); });
    return result;
  }

  rank_actor rank_of(const instance_supervisor_actor& sup, uint32_t i) {
    self->send(sup, caf::get_atom::value, i);
    run();
    rank_actor result;
    self->receive([&](caf::strong_actor_ptr& p) { result = caf::actor_cast<rank_actor>(p); },
                  caf::after(std::chrono::seconds(5)) >> [] { BOOST_FAIL("supervisor did not answer"); });
    return result;
  }

  rank_status ping(const rank_actor& r) {
    self->send(r, caf::ping_atom::value);
    run();
    rank_status result;
    self->receive([&](rank_status& s) { result = s; },
                  caf::after(std::chrono::seconds(5)) >> [] { BOOST_FAIL("rank did not answer"); });
    return result;
  }
};

instance_supervisor_config three_ranks() {
  instance_supervisor_config cfg;
  cfg.instance = "n0/decode";
  cfg.node = "n0";
  cfg.role = node_role::decode;
  cfg.ranks = 3;
  cfg.restart_delay = std::chrono::milliseconds{10};
  return cfg;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(instance_supervisor, fixture)

BOOST_AUTO_TEST_CASE(first_generation_runs_with_all_configured_ranks) {
  auto sup = spawn_instance_supervisor(sys, three_ranks(), node_agent_actor{});
  run();
  auto s = status_of(sup);
  BOOST_TEST(s.instance == "n0/decode");
  BOOST_TEST(s.configured_ranks == 3u);
  BOOST_TEST(s.healthy_ranks == 3u);
  BOOST_TEST(s.generation == 1u);
  BOOST_TEST((s.state == instance_state::running));
  auto r2 = ping(rank_of(sup, 2));
  BOOST_TEST(r2.rank == 2u);
  BOOST_TEST(r2.ep_size == 3u);
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  run();
}

BOOST_AUTO_TEST_CASE(killed_rank_restarts_the_instance_with_one_rank_fewer) {
  auto sup = spawn_instance_supervisor(sys, three_ranks(), node_agent_actor{});
  run();
  auto old_rank0 = rank_of(sup, 0);
  // Fault injection: one rank crashes (as a CUDA error would make it).
  self->send(sup, fail_atom::value, uint32_t{1}, std::string{"injected fault"});
  run();
  auto s = status_of(sup);
  BOOST_TEST(s.healthy_ranks == 2u);
  BOOST_TEST(s.generation == 2u);
  BOOST_TEST((s.state == instance_state::running));
  BOOST_TEST(s.last_failure.find("rank 1") != std::string::npos);
  BOOST_TEST(s.last_failure.find("injected fault") != std::string::npos);
  // The whole communication domain was replaced: the new ranks form EP=2 of generation 2, and
  // the healthy rank of generation 1 was stopped with it.
  auto r = ping(rank_of(sup, 1));
  BOOST_TEST(r.ep_size == 2u);
  BOOST_TEST(r.generation == 2u);
  BOOST_TEST(!static_cast<bool>(rank_of(sup, 2)));
  BOOST_TEST((old_rank0 != rank_of(sup, 0)));
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  run();
}

BOOST_AUTO_TEST_CASE(an_actor_killed_from_outside_counts_as_a_rank_failure) {
  auto sup = spawn_instance_supervisor(sys, three_ranks(), node_agent_actor{});
  run();
  self->send_exit(rank_of(sup, 0), caf::exit_reason::kill);
  run();
  auto s = status_of(sup);
  BOOST_TEST(s.healthy_ranks == 2u);
  BOOST_TEST(s.generation == 2u);
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  run();
}

BOOST_AUTO_TEST_CASE(a_rank_failed_for_a_while_is_back_in_the_generation_after_its_down_time) {
  auto sup = spawn_instance_supervisor(sys, three_ranks(), node_agent_actor{});
  run();
  const auto t0 = std::chrono::steady_clock::now();
  self->send(sup, fail_atom::value, uint32_t{1}, std::string{"admin"}, int64_t{150});
  // Delivers the restart (2 ranks) and then the grow, which waits for the clock to pass 150 ms.
  run();
  auto s = status_of(sup);
  BOOST_TEST((std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds{150}));
  BOOST_TEST((s.state == instance_state::running));
  BOOST_TEST(s.healthy_ranks == 3u);  // grown back to the configured size
  BOOST_TEST(s.generation == 3u);     // 1: three ranks, 2: two (rank 1 down), 3: three again
  BOOST_TEST(ping(rank_of(sup, 2)).generation == 3u);
  // A failure with no down time is for good: the next generations stay smaller.
  self->send(sup, fail_atom::value, uint32_t{0}, std::string{"crash"});
  run();
  s = status_of(sup);
  BOOST_TEST(s.healthy_ranks == 2u);
  BOOST_TEST(s.generation == 4u);
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  run();
}

BOOST_AUTO_TEST_CASE(instance_fails_when_its_last_rank_fails) {
  auto cfg = three_ranks();
  cfg.ranks = 1;
  auto sup = spawn_instance_supervisor(sys, cfg, node_agent_actor{});
  run();
  self->send(sup, fail_atom::value, uint32_t{0}, std::string{"boom"});
  run();
  auto s = status_of(sup);
  BOOST_TEST(s.healthy_ranks == 0u);
  BOOST_TEST((s.state == instance_state::failed));
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  run();
}

BOOST_AUTO_TEST_CASE(a_drain_notice_marks_the_instance_draining_and_is_answered_once_its_ranks_hold_nothing) {
  auto sup = spawn_instance_supervisor(sys, three_ranks(), node_agent_actor{});
  run();
  // No grace and no sequence: every rank is drained at once, none handed off.
  self->send(sup, drain_atom::value, int64_t{0});
  run();
  uint64_t moved = 99;
  self->receive([&](uint64_t n) { moved = n; },
                caf::after(std::chrono::seconds(5)) >> [] { BOOST_FAIL("drain not answered"); });
  BOOST_TEST(moved == 0u);
  auto s = status_of(sup);
  BOOST_TEST((s.state == instance_state::draining)); // the routers pass it over
  // A rank failing now restarts the instance still draining (it never serves again).
  self->send(sup, fail_atom::value, uint32_t{0}, std::string{"injected fault"});
  run();
  s = status_of(sup);
  BOOST_TEST(s.generation == 2u);
  BOOST_TEST((s.state == instance_state::draining));
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  run();
}

// A prefill instance given back to the ready pool (issue 17) drains too: it holds no sequence to
// hand off, so an idle one is answered at once; a vision instance refuses.
BOOST_AUTO_TEST_CASE(prefill_instances_drain_and_vision_instances_refuse) {
  auto cfg = three_ranks();
  cfg.instance = "n0/prefill";
  cfg.role = node_role::prefill;
  auto sup = spawn_instance_supervisor(sys, cfg, node_agent_actor{});
  run();
  self->send(sup, drain_atom::value, int64_t{0});
  run();
  uint64_t moved = 99;
  self->receive([&](uint64_t n) { moved = n; }, [&](caf::error& e) { BOOST_FAIL(sys.render(e)); },
                caf::after(std::chrono::seconds(5)) >> [] { BOOST_FAIL("drain not answered"); });
  BOOST_TEST(moved == 0u);
  BOOST_TEST((status_of(sup).state == instance_state::draining));
  self->send_exit(sup, caf::exit_reason::user_shutdown);
  run();

  cfg.instance = "n0/vision";
  cfg.role = node_role::vision;
  auto vision = spawn_instance_supervisor(sys, cfg, node_agent_actor{});
  run();
  self->send(vision, drain_atom::value, int64_t{0});
  run();
  bool refused = false;
  self->receive([&](uint64_t) {}, [&](caf::error& e) { refused = is(e, errc::engine_invalid_request); },
                caf::after(std::chrono::seconds(5)) >> [] { BOOST_FAIL("drain not answered"); });
  BOOST_TEST(refused);
  BOOST_TEST((status_of(vision).state == instance_state::running));
  self->send_exit(vision, caf::exit_reason::user_shutdown);
  run();
}

BOOST_AUTO_TEST_SUITE_END()
