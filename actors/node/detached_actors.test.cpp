// A node's stop waits until CAF lets go of its detached actors (detached_actors.hpp): a
// terminated detached actor that something still references counts as held, and is released
// once that reference goes.
#include "actors/node/detached_actors.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/testing/test_system_config.hpp"

using namespace deepinfer::actors;

BOOST_AUTO_TEST_SUITE(detached_actors_suite)

BOOST_AUTO_TEST_CASE(a_terminated_detached_actor_is_held_until_its_last_reference_goes) {
  testing::test_system_config cfg;
  caf::actor_system sys{cfg};
  detached_actors tracked;
  auto worker = sys.spawn<caf::detached>([](caf::event_based_actor*) -> caf::behavior {
    return {[](int x) { return x; }};
  });
  tracked.add(worker.address());
  BOOST_TEST(tracked.held() == 1u);
  {
    caf::scoped_actor self{sys};
    self->monitor(worker);
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    self->receive([](caf::down_msg&) {});
  }
  // Terminated, but `worker` still references it: its thread cannot end, so it is held.
  BOOST_TEST(tracked.wait_released(std::chrono::milliseconds{50}) == 1u);
  worker = nullptr;
  BOOST_TEST(tracked.wait_released(std::chrono::milliseconds{2000}) == 0u);
  BOOST_TEST(tracked.held() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
