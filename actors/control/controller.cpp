#include "actors/control/controller.hpp"

#include <chrono>
#include <map>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/balancer/balancer_actors.hpp"
#include "actors/log.hpp"
#include "actors/control/membership.hpp"

namespace deepinfer::actors {

namespace {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

struct registered_agent {
  std::string node;
  uint64_t incarnation = 0;
  node_agent_actor handle;
};

struct controller_state {
  membership members{now_ms};
  std::map<caf::actor_addr, registered_agent> agents;
  balancer_actors_config balancer_cfg;
  prefill_balancer_actor prefill_balancer;
  decode_balancer_actor decode_balancer;
  static inline const char* name = "deepinfer.controller";
};

using controller_pointer = controller_actor::stateful_pointer<controller_state>;

void broadcast(controller_pointer self) {
  auto& view = self->state.members.view();
  for (auto& [addr, agent] : self->state.agents)
    self->send(agent.handle, view_atom::value, view);
  if (self->state.prefill_balancer)
    self->send(self->state.prefill_balancer, view_atom::value, view);
  if (self->state.decode_balancer)
    self->send(self->state.decode_balancer, view_atom::value, view);
}

/// Starts whichever balancer is not running (at start, and after one died: its state is soft)
/// and names both in the view.
void start_balancers(controller_pointer self) {
  auto& st = self->state;
  if (!st.prefill_balancer) {
    st.prefill_balancer = spawn_prefill_balancer(self->system(), st.balancer_cfg);
    self->monitor(st.prefill_balancer);
    // It goes with the controller (views elsewhere hold handles that would keep it alive).
    self->attach_functor([b = st.prefill_balancer](const caf::error&) {
      caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
    });
  }
  if (!st.decode_balancer) {
    st.decode_balancer = spawn_decode_balancer(self->system(), st.balancer_cfg);
    self->monitor(st.decode_balancer);
    self->attach_functor([b = st.decode_balancer](const caf::error&) {
      caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
    });
  }
  st.members.set_balancers(caf::actor_cast<caf::strong_actor_ptr>(st.prefill_balancer),
                           caf::actor_cast<caf::strong_actor_ptr>(st.decode_balancer));
  broadcast(self);
}

void forget_agent_of(controller_pointer self, const std::string& node) {
  auto& agents = self->state.agents;
  for (auto i = agents.begin(); i != agents.end();) {
    if (i->second.node == node) {
      self->demonitor(i->first);
      i = agents.erase(i);
    } else {
      ++i;
    }
  }
}

controller_actor::behavior_type controller(controller_pointer self, balancer_actors_config cfg) {
  self->state.balancer_cfg = std::move(cfg);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.prefill_balancer.address() || dm.source == st.decode_balancer.address()) {
      log().warn("{} balancer down reason={}; restarting it",
                 dm.source == st.prefill_balancer.address() ? "prefill" : "decode", self->system().render(dm.reason));
      if (dm.source == st.prefill_balancer.address())
        st.prefill_balancer = nullptr;
      else
        st.decode_balancer = nullptr;
      start_balancers(self);
      return;
    }
    auto i = self->state.agents.find(dm.source);
    if (i == self->state.agents.end())
      return;
    auto agent = std::move(i->second);
    self->state.agents.erase(i);
    auto reason = self->system().render(dm.reason);
    if (self->state.members.mark_dead(agent.node, agent.incarnation, reason)) {
      log().warn("node={} dead reason={}", agent.node, reason);
      broadcast(self);
    }
  });
  start_balancers(self);
  return {
    [=](register_atom, node_info& info, caf::strong_actor_ptr& agent_ptr) -> membership_view {
      auto agent = caf::actor_cast<node_agent_actor>(agent_ptr);
      forget_agent_of(self, info.name);
      if (agent) {
        self->monitor(agent);
        self->state.agents[agent.address()] = {info.name, info.incarnation, agent};
      }
      auto joins = self->state.members.join(info);
      log().info("node={} joined host={} port={} pid={} joins={}", info.name, info.host, info.port,
                 info.pid, joins);
      broadcast(self);
      return self->state.members.view();
    },
    [=](caf::leave_atom, std::string& node) -> caf::ok_atom {
      forget_agent_of(self, node);
      if (self->state.members.mark_left(node)) {
        log().info("node={} left", node);
        broadcast(self);
      }
      return caf::ok_atom::value;
    },
    [=](report_atom, instance_status& status) {
      if (self->state.members.report(status)) {
        log().info("instance={} state={} ranks={}/{} generation={}", status.instance,
                   to_string(status.state), status.healthy_ranks, status.configured_ranks,
                   status.generation);
        broadcast(self);
      }
    },
    [=](caf::get_atom, view_atom) -> membership_view { return self->state.members.view(); },
  };
}

} // namespace

controller_actor spawn_controller(caf::actor_system& sys, const balancer_actors_config& balancers) {
  return sys.spawn(controller, balancers);
}

} // namespace deepinfer::actors
