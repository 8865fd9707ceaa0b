#include "actors/node/node_agent.hpp"

#include <chrono>
#include <map>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/errors.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

constexpr auto register_timeout = std::chrono::seconds(5);

/// How long a pool instance's drain may take beyond its grace before it is stopped anyway (what
/// it still holds is then resubmitted by its requests).
constexpr auto drain_slack = std::chrono::seconds{90};

/// The instance the controller gave this ready-pool node.
struct pool_instance {
  node_role role = node_role::decode;
  std::string name;
  instance_supervisor_actor supervisor;
  bool leaving = false;
};

struct agent_state {
  node_agent_config cfg;
  controller_actor controller;
  std::map<std::string, instance_status> reports;
  std::optional<pool_instance> pooled;
  /// Supervisors of pool instances stopped here: a report of theirs still in the mailbox must
  /// not bring the instance back after its `stopped`.
  std::vector<caf::actor_addr> retired;
  static inline const char* name = "deepinfer.node_agent";
};

using agent_pointer = node_agent_actor::stateful_pointer<agent_state>;

void lose_controller(agent_pointer self, const std::string& why) {
  auto& st = self->state;
  if (st.controller) {
    self->demonitor(st.controller.address());
    st.controller = nullptr;
  }
  st.cfg.snapshot->set_controller_connected(false);
  log().warn("node={} controller lost reason={}", st.cfg.self.name, why);
  if (st.cfg.on_controller_lost)
    st.cfg.on_controller_lost();
}

void relay(agent_pointer self, instance_status status) {
  auto& st = self->state;
  st.reports[status.instance] = status;
  if (st.controller)
    self->send(st.controller, report_atom::value, std::move(status));
}

caf::result<std::string> assign(agent_pointer self, const pool_assignment& a) {
  auto& st = self->state;
  if (!st.cfg.start_instance)
    return make_error(errc::pool_refused, "node " + st.cfg.self.name + " is not a ready-pool node");
  if (st.pooled) {
    if (st.pooled->role == a.role && !st.pooled->leaving)
      return st.pooled->name; // asked again (a controller that restarted): already serving
    return make_error(errc::pool_refused, "node " + st.cfg.self.name + " already serves "
                                                      + st.pooled->name);
  }
  auto sup = st.cfg.start_instance(a.role, self);
  if (!sup)
    return sup.error();
  st.pooled = pool_instance{a.role, st.cfg.self.name + "/" + to_string(a.role), *sup, false};
  log().info("node={} leaves the ready pool: instance={} starts", st.cfg.self.name, st.pooled->name);
  return st.pooled->name;
}

/// Stops the pool instance and tells the controller it is `stopped`: the node is idle again.
void retire(agent_pointer self) {
  auto& st = self->state;
  if (!st.pooled)
    return;
  auto p = std::move(*st.pooled);
  st.pooled.reset();
  st.retired.push_back(p.supervisor.address());
  self->send_exit(p.supervisor, caf::exit_reason::user_shutdown);
  if (st.cfg.instance_stopped)
    st.cfg.instance_stopped(p.role);
  instance_status status;
  if (auto it = st.reports.find(p.name); it != st.reports.end())
    status = it->second;
  status.instance = p.name;
  status.node = st.cfg.self.name;
  status.role = p.role;
  status.state = instance_state::stopped;
  status.healthy_ranks = 0;
  status.ranks.clear();
  status.supervisor = nullptr;
  relay(self, std::move(status));
  log().info("node={} is back in the ready pool: instance={} stopped", st.cfg.self.name, p.name);
}

caf::result<uint64_t> unassign(agent_pointer self, const pool_assignment& a) {
  auto& st = self->state;
  if (!st.pooled || st.pooled->role != a.role)
    return make_error(errc::pool_refused, "node " + st.cfg.self.name + " serves no pool "
                                                      + to_string(a.role) + " instance");
  if (st.pooled->leaving)
    return make_error(errc::pool_refused, st.pooled->name + " is already draining");
  st.pooled->leaving = true;
  auto promise = self->make_response_promise<uint64_t>();
  const auto grace = std::chrono::milliseconds{std::max<int64_t>(a.grace_ms, 0)};
  auto sup = st.pooled->supervisor;
  self->request(sup, grace + drain_slack, drain_atom::value, a.grace_ms)
    .then(
      [=](uint64_t moved) mutable {
        retire(self);
        promise.deliver(moved);
      },
      [=](caf::error& e) mutable {
        log().warn("node={} pool instance drain: {}; stopping it anyway (its requests are resubmitted)",
                   self->state.cfg.self.name, self->system().render(e));
        retire(self);
        promise.deliver(uint64_t{0});
      });
  return promise;
}

node_agent_actor::behavior_type node_agent(agent_pointer self, node_agent_config cfg) {
  self->state.cfg = std::move(cfg);
  self->state.cfg.snapshot->set_self(self->state.cfg.self);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (self->state.controller && dm.source == self->state.controller.address())
      lose_controller(self, self->system().render(dm.reason));
  });
  return {
    [=](ctl_up_atom, caf::strong_actor_ptr& ptr) {
      auto ctl = caf::actor_cast<controller_actor>(ptr);
      if (!ctl)
        return;
      if (self->state.controller)
        self->demonitor(self->state.controller.address());
      self->state.controller = ctl;
      self->monitor(ctl);
      self->request(ctl, register_timeout, register_atom::value, self->state.cfg.self,
                    caf::actor_cast<caf::strong_actor_ptr>(self))
        .then(
          [=](membership_view& view) {
            auto& st = self->state;
            st.cfg.snapshot->set_view(std::move(view));
            log().info("node={} registered with controller", st.cfg.self.name);
            for (auto& [name, status] : st.reports)
              self->send(st.controller, report_atom::value, status);
          },
          [=](caf::error& err) { lose_controller(self, self->system().render(err)); });
    },
    [=](report_atom, instance_status& status) {
      auto& st = self->state;
      const auto from = caf::actor_cast<caf::actor_addr>(status.supervisor);
      if (from && std::find(st.retired.begin(), st.retired.end(), from) != st.retired.end())
        return; // a stopped pool instance's last word, after its `stopped`
      relay(self, std::move(status));
    },
    [=](assign_atom, const pool_assignment& a) { return assign(self, a); },
    [=](unassign_atom, const pool_assignment& a) { return unassign(self, a); },
    [=](view_atom, membership_view& view) { self->state.cfg.snapshot->set_view(std::move(view)); },
    [=](status_atom) -> node_info { return self->state.cfg.self; },
    [=](echo_atom, byte_payload& payload) -> byte_payload { return std::move(payload); },
  };
}

} // namespace

node_agent_actor spawn_node_agent(caf::actor_system& sys, node_agent_config cfg) {
  return sys.spawn(node_agent, std::move(cfg));
}

} // namespace deepinfer::actors
