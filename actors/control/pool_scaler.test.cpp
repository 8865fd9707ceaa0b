#include "actors/control/pool_scaler.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::actors;

namespace {

struct fixture {
  membership_view view;
  pool_scaler pool;

  void node(std::string name, role_set roles, node_state state = node_state::alive) {
    node_status n;
    n.info.name = std::move(name);
    n.info.roles = roles;
    n.state = state;
    view.nodes.push_back(n);
  }
  void instance(std::string node, node_role role, instance_state state, uint32_t ranks = 1) {
    instance_status i;
    i.node = node;
    i.instance = node + "/" + to_string(role);
    i.role = role;
    i.state = state;
    i.healthy_ranks = ranks;
    i.configured_ranks = ranks;
    view.instances.push_back(i);
  }
  void set_state(const std::string& node, instance_state state) {
    for (auto& i : view.instances)
      if (i.node == node)
        i.state = state;
  }

  /// p0 and d0 fixed; pool0, pool1 either role; pool2 decode only.
  void cluster() {
    node("p0", {node_role::prefill});
    node("d0", {node_role::decode});
    node("pool0", {node_role::pool});
    node("pool1", {node_role::pool});
    node("pool2", {node_role::pool, node_role::decode});
    instance("p0", node_role::prefill, instance_state::running, 2);
    instance("d0", node_role::decode, instance_state::running);
  }
};

using kind = pool_scaler::action::kind;

} // namespace

BOOST_FIXTURE_TEST_SUITE(pool_scaler_tests, fixture)

BOOST_AUTO_TEST_CASE(counts_fixed_instances_and_idle_pool_nodes) {
  cluster();
  instance("gone", node_role::decode, instance_state::running);  // its node never joined: not alive
  auto c = pool.count(view);
  BOOST_TEST(c.prefill == 1);
  BOOST_TEST(c.decode == 1);
  BOOST_TEST(c.prefill_ranks == 2u);
  BOOST_TEST(c.idle_pool == 3);
}

BOOST_AUTO_TEST_CASE(scale_up_assigns_idle_pool_nodes_that_may_take_the_role) {
  cluster();
  // A prefill-only scale-up may not use pool2 (decode only).
  auto r = pool.plan(view, 3, 1);
  BOOST_REQUIRE_EQUAL(r.actions.size(), 2u);
  BOOST_TEST((r.actions[0].what == kind::assign && r.actions[0].node == "pool0" && r.actions[0].role == node_role::prefill));
  BOOST_TEST((r.actions[1].what == kind::assign && r.actions[1].node == "pool1"));
  BOOST_TEST(r.waiting.empty());
  // Counted while they load (as starting): the same targets ask nothing more.
  BOOST_TEST(pool.count(view).prefill == 3);
  BOOST_TEST(pool.count(view).prefill_starting == 2);
  pool.assigned("pool0", true);
  instance("pool0", node_role::prefill, instance_state::running);
  BOOST_TEST(pool.count(view).prefill_starting == 1);
  BOOST_TEST(pool.plan(view, 3, 1).actions.empty());
  // One more decode takes pool2; a further one waits (the pool is empty).
  r = pool.plan(view, 3, 3);
  BOOST_REQUIRE_EQUAL(r.actions.size(), 1u);
  BOOST_TEST(r.actions[0].node == "pool2");
  BOOST_REQUIRE_EQUAL(r.waiting.size(), 1u);
  BOOST_TEST((r.waiting[0] == node_role::decode));
  BOOST_TEST(pool.count(view).idle_pool == 0);
}

BOOST_AUTO_TEST_CASE(a_refused_assignment_returns_the_node_to_the_pool) {
  cluster();
  auto r = pool.plan(view, 1, 2);
  BOOST_REQUIRE_EQUAL(r.actions.size(), 1u);
  pool.assigned(r.actions[0].node, false);
  BOOST_TEST(pool.find(r.actions[0].node) == nullptr);
  BOOST_TEST(pool.count(view).decode == 1);
  BOOST_TEST(pool.count(view).idle_pool == 3);
}

BOOST_AUTO_TEST_CASE(scale_down_releases_only_pool_instances_latest_first) {
  cluster();
  auto r = pool.plan(view, 1, 3);  // decode on pool0, then pool1
  BOOST_REQUIRE_EQUAL(r.actions.size(), 2u);
  for (auto& a : r.actions) {
    pool.assigned(a.node, true);
    instance(a.node, node_role::decode, instance_state::running);
  }
  BOOST_TEST(pool.count(view).decode == 3);
  // Down to 1: both pool instances go, latest first; d0 (fixed) never does.
  r = pool.plan(view, 1, 0);
  BOOST_REQUIRE_EQUAL(r.actions.size(), 2u);
  BOOST_TEST((r.actions[0].what == kind::release && r.actions[0].node == "pool1"));
  BOOST_TEST((r.actions[1].what == kind::release && r.actions[1].node == "pool0"));
  // Leaving ones count as gone at once: the next decision does not drain more.
  set_state("pool1", instance_state::draining);
  BOOST_TEST(pool.count(view).decode == 1);
  BOOST_TEST(pool.plan(view, 1, 0).actions.empty());
  BOOST_TEST(pool.count(view).idle_pool == 1);  // pool2 only, until the drains answer
  pool.released("pool1");
  set_state("pool1", instance_state::stopped);
  BOOST_TEST(pool.count(view).idle_pool == 2);
  BOOST_TEST(pool.count(view).decode == 1);
}

BOOST_AUTO_TEST_CASE(a_dead_pool_node_is_forgotten_and_not_counted) {
  cluster();
  auto r = pool.plan(view, 1, 2);
  pool.assigned(r.actions[0].node, true);
  view.nodes[2].state = node_state::dead;  // pool0
  BOOST_TEST(pool.count(view).decode == 1);
  pool.forget("pool0");
  BOOST_TEST(pool.find("pool0") == nullptr);
  // The scale-up asks again, of another node.
  r = pool.plan(view, 1, 2);
  BOOST_REQUIRE_EQUAL(r.actions.size(), 1u);
  BOOST_TEST(r.actions[0].node == "pool1");
}

BOOST_AUTO_TEST_CASE(a_restarted_controller_adopts_what_pool_nodes_serve) {
  cluster();
  instance("pool0", node_role::decode, instance_state::running);
  instance("pool1", node_role::prefill, instance_state::draining);
  // A fresh scaler (the controller restarted) learns both from the view.
  auto r = pool.plan(view, 1, 2);
  BOOST_TEST(r.actions.empty());
  BOOST_REQUIRE(pool.find("pool0") != nullptr);
  BOOST_TEST((pool.find("pool0")->state == pool_scaler::phase::serving));
  BOOST_REQUIRE(pool.find("pool1") != nullptr);
  BOOST_TEST((pool.find("pool1")->state == pool_scaler::phase::leaving));
  BOOST_TEST(pool.count(view).idle_pool == 1);  // pool2
  // The drain ends (its answer went to the old controller): stopped in the view, idle again.
  set_state("pool1", instance_state::stopped);
  r = pool.plan(view, 1, 2);
  BOOST_TEST(pool.find("pool1") == nullptr);
  BOOST_TEST(pool.count(view).idle_pool == 2);
  // Scale-down releases the adopted instance like one it assigned.
  r = pool.plan(view, 1, 1);
  BOOST_REQUIRE_EQUAL(r.actions.size(), 1u);
  BOOST_TEST((r.actions[0].what == kind::release && r.actions[0].node == "pool0"));
}

BOOST_AUTO_TEST_SUITE_END()
