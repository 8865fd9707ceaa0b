#include "engine/thread_priority.hpp"

#include <thread>

#include <boost/test/unit_test.hpp>

using deepinfer::engine::lower_this_thread;
using deepinfer::engine::this_thread_priority;
using deepinfer::engine::thread_priority;

BOOST_AUTO_TEST_SUITE(thread_priority_suite)

namespace {

/// What `priority` leaves on a new thread, on it and on a thread it starts afterwards; the
/// calling thread (the test runner's) is never changed.
struct applied {
  std::optional<std::string> error;
  thread_priority self, child;
};

applied apply_on_a_new_thread(const thread_priority& priority) {
  applied out;
  std::thread([&] {
    out.error = lower_this_thread(priority);
    out.self = this_thread_priority();
    std::thread([&] { out.child = this_thread_priority(); }).join();
  }).join();
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(idle_and_nice_apply_to_the_calling_thread_and_what_it_starts) {
  const auto before = this_thread_priority();
  const auto idle = apply_on_a_new_thread({true, 0});
  BOOST_TEST_INFO(idle.error.value_or(""));
  BOOST_TEST_REQUIRE(!idle.error.has_value());
  BOOST_TEST(idle.self.idle);
  BOOST_TEST(idle.child.idle);

  // 19: lowering to it is allowed from any niceness the test may run at.
  const auto nice = apply_on_a_new_thread({false, 19});
  BOOST_TEST_INFO(nice.error.value_or(""));
  BOOST_TEST_REQUIRE(!nice.error.has_value());
  BOOST_TEST(!nice.self.idle);
  BOOST_TEST(nice.self.nice == 19);
  BOOST_TEST(nice.child.nice == nice.self.nice);
  // Per thread: the caller keeps its own.
  BOOST_TEST((this_thread_priority() == before));
}

BOOST_AUTO_TEST_CASE(a_priority_that_is_not_lowered_changes_nothing) {
  const auto before = this_thread_priority();
  const auto same = apply_on_a_new_thread({});
  BOOST_TEST(!same.error.has_value());
  BOOST_TEST((same.self == before));
  BOOST_TEST(!thread_priority{}.lowered());
  const thread_priority idle{true, 0}, nice{false, 1};
  BOOST_TEST(idle.lowered());
  BOOST_TEST(nice.lowered());
}

BOOST_AUTO_TEST_SUITE_END()
