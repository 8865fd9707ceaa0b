#include "actors/control/instance_supervisor.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/errors.hpp"
#include "actors/log.hpp"
#include "actors/instance/rank.hpp"

namespace deepinfer::actors {

namespace {

struct supervisor_state {
  instance_supervisor_config cfg;
  node_agent_actor observer;
  instance_status status;
  // The current generation, index = rank. Shared with the exit functor, which runs after the
  // state is destroyed.
  std::shared_ptr<std::vector<rank_actor>> ranks = std::make_shared<std::vector<rank_actor>>();
  static inline const char* name = "deepinfer.instance_supervisor";
};

using supervisor_pointer = instance_supervisor_actor::stateful_pointer<supervisor_state>;

void publish(supervisor_pointer self) {
  if (!self->state.observer)
    return;
  // The handle travels only in reports: kept in our own state it would keep us alive.
  auto status = self->state.status;
  status.supervisor = caf::actor_cast<caf::strong_actor_ptr>(self);
  if (status.state == instance_state::running)
    for (auto& r : *self->state.ranks)
      status.ranks.push_back(caf::actor_cast<caf::strong_actor_ptr>(r));
  self->send(self->state.observer, report_atom::value, std::move(status));
}

void start_generation(supervisor_pointer self, uint32_t n) {
  auto& st = self->state;
  st.ranks->clear();
  for (uint32_t i = 0; i < n; ++i) {
    auto r = spawn_rank(self->system(), {i, n, st.status.generation, st.cfg.engine});
    // Monitored, not linked: a DOWN arrives for every exit reason, including exit_reason::kill,
    // which a link would propagate to us untrappably.
    self->monitor(r);
    st.ranks->push_back(r);
  }
  st.status.healthy_ranks = n;
  st.status.state = instance_state::running;
  log().info("instance={} generation={} running ranks={}", st.cfg.instance, st.status.generation, n);
  publish(self);
}

void on_rank_down(supervisor_pointer self, const caf::down_msg& dm) {
  auto& st = self->state;
  auto& ranks = *st.ranks;
  auto it = std::find_if(ranks.begin(), ranks.end(),
                         [&](const rank_actor& r) { return r.address() == dm.source; });
  if (it == ranks.end())
    return;  // a rank of an earlier generation that we stopped ourselves
  auto failed = static_cast<uint32_t>(it - ranks.begin());
  // 1. The whole communication domain fails with one rank: stop the others of this generation.
  auto healthy = static_cast<uint32_t>(ranks.size()) - 1;
  for (auto& r : ranks)
    if (r.address() != dm.source) {
      self->demonitor(r.address());
      self->send_exit(r, caf::exit_reason::user_shutdown);
    }
  ranks.clear();
  st.status.last_failure = "rank " + std::to_string(failed) + ": " + self->system().render(dm.reason);
  log().warn("instance={} generation={} rank={} failed reason={} healthy={}", st.cfg.instance,
             st.status.generation, failed, st.status.last_failure, healthy);
  // 2. Restart with the healthy ranks, or give up when none is left.
  if (healthy == 0) {
    st.status.healthy_ranks = 0;
    st.status.state = instance_state::failed;
    publish(self);
    return;
  }
  st.status.state = instance_state::restarting;
  st.status.healthy_ranks = healthy;
  publish(self);
  self->delayed_send(self, st.cfg.restart_delay, restart_atom::value, healthy);
}

instance_supervisor_actor::behavior_type
instance_supervisor(supervisor_pointer self, instance_supervisor_config cfg,
                    node_agent_actor observer) {
  auto& st = self->state;
  st.cfg = cfg;
  st.observer = std::move(observer);
  st.status.instance = cfg.instance;
  st.status.node = cfg.node;
  st.status.role = cfg.role;
  st.status.configured_ranks = cfg.ranks;
  st.status.kv_tokens_per_rank = cfg.engine.kv_blocks * rank_engine_config::tokens_per_block;
  st.status.generation = 1;
  self->set_down_handler([=](caf::down_msg& dm) { on_rank_down(self, dm); });
  // Stopping the supervisor stops its ranks.
  self->attach_functor([ranks = st.ranks](const caf::error&) {
    for (auto& r : *ranks)
      caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
  });
  start_generation(self, cfg.ranks);
  return {
    [=](status_atom) -> instance_status { return self->state.status; },
    [=](caf::get_atom, uint32_t rank) -> caf::strong_actor_ptr {
      auto& ranks = *self->state.ranks;
      if (rank >= ranks.size())
        return nullptr;
      return caf::actor_cast<caf::strong_actor_ptr>(ranks[rank]);
    },
    [=](fail_atom, uint32_t rank, std::string& reason) {
      auto& ranks = *self->state.ranks;
      if (rank < ranks.size())
        self->send(ranks[rank], fail_atom::value, std::move(reason));
    },
    [=](restart_atom, uint32_t healthy) {
      ++self->state.status.generation;
      start_generation(self, healthy);
    },
  };
}

} // namespace

instance_supervisor_actor spawn_instance_supervisor(caf::actor_system& sys,
                                                    const instance_supervisor_config& cfg,
                                                    node_agent_actor observer) {
  return sys.spawn(instance_supervisor, cfg, std::move(observer));
}

} // namespace deepinfer::actors
