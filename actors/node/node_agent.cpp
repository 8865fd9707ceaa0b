#include "actors/node/node_agent.hpp"

#include <chrono>
#include <map>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

constexpr auto register_timeout = std::chrono::seconds(5);

struct agent_state {
  node_agent_config cfg;
  controller_actor controller;
  std::map<std::string, instance_status> reports;
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
      st.reports[status.instance] = status;
      if (st.controller)
        self->send(st.controller, report_atom::value, std::move(status));
    },
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
