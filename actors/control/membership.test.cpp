#include "actors/control/membership.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::actors;

namespace {

struct fixture {
  int64_t now = 1000;
  membership m{[this] { return now; }};

  node_info node(std::string name, uint64_t incarnation) {
    node_info n;
    n.name = std::move(name);
    n.host = "127.0.0.1";
    n.port = 7100;
    n.incarnation = incarnation;
    return n;
  }

  /// A running instance of `node` as its supervisor reports it.
  static instance_status running(std::string instance, std::string node) {
    instance_status s;
    s.instance = std::move(instance);
    s.node = std::move(node);
    s.state = instance_state::running;
    return s;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(membership_view_tests, fixture)

BOOST_AUTO_TEST_CASE(dead_node_rejoins_with_a_new_incarnation) {
  BOOST_TEST(m.join(node("d0", 1)) == 1u);
  now = 2000;
  BOOST_TEST(m.mark_dead("d0", 1, "remote_link_unreachable"));
  BOOST_TEST((m.node("d0")->state == node_state::dead));
  BOOST_TEST(m.node("d0")->since_ms == 2000);
  BOOST_TEST(m.join(node("d0", 2)) == 2u);
  BOOST_TEST((m.node("d0")->state == node_state::alive));
  BOOST_TEST(m.node("d0")->reason.empty());
}

BOOST_AUTO_TEST_CASE(late_down_of_a_replaced_incarnation_is_ignored) {
  m.join(node("d0", 1));
  m.join(node("d0", 2));
  auto version = m.view().version;
  BOOST_TEST(!m.mark_dead("d0", 1, "late"));
  BOOST_TEST((m.node("d0")->state == node_state::alive));
  BOOST_TEST(m.view().version == version);
}

BOOST_AUTO_TEST_CASE(instances_of_a_dead_node_are_marked_failed) {
  m.join(node("d0", 1));
  auto s = running("d0/decode", "d0");
  BOOST_TEST(m.report(s));
  BOOST_TEST(!m.report(s));  // unchanged: no new version
  m.mark_dead("d0", 1, "gone");
  BOOST_TEST((m.view().instances.front().state == instance_state::failed));
}

BOOST_AUTO_TEST_CASE(a_prefill_instance_reports_the_cost_model_of_its_engine) {
  m.join(node("p0", 1));
  auto s = running("p0/prefill", "p0");
  s.prefill_cost.a1 = 2e-5;
  BOOST_TEST(m.report(s));
  BOOST_TEST(m.view().instances.front().prefill_cost.a1 == 2e-5);
  // A refit (the node restarted on other hardware) is a change the balancers must see.
  s.prefill_cost.a1 = 6e-5;
  BOOST_TEST(m.report(s));
  BOOST_TEST(m.view().instances.front().prefill_cost.a1 == 6e-5);
  BOOST_TEST(!m.report(s));
}

BOOST_AUTO_TEST_CASE(left_is_distinct_from_dead) {
  m.join(node("p0", 1));
  BOOST_TEST(m.mark_left("p0"));
  BOOST_TEST((m.node("p0")->state == node_state::left));
  BOOST_TEST(!m.mark_dead("p0", 1, "after leaving"));
}

BOOST_AUTO_TEST_SUITE_END()
