#include <chrono>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/balancer/balancer_actors.hpp"
#include "actors/balancer/balancer_metrics.hpp"
#include "actors/balancer/balancer_view.hpp"
#include "actors/balancer/requester_keys.hpp"
#include "actors/errors.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

struct prefill_balancer_state {
  std::unique_ptr<balancers::serving_router> router;
  balancer_view live;
  /// Jobs waiting for an instance to pull them (their requesters are in `held`).
  std::unordered_map<uint64_t, caf::typed_response_promise<rank_grant>> waiting;
  /// Keys each requester holds (queued or running), so its DOWN releases them all.
  requester_keys held;
  std::shared_ptr<balancer_loads> loads;
  /// When each waiting job was submitted (its queue time goes to `demand` when pulled).
  std::unordered_map<uint64_t, std::chrono::steady_clock::time_point> queued_at;
  std::shared_ptr<prefill_demand> demand;
  static inline const char* name = "deepinfer.prefill_balancer";
};

using prefill_pointer = prefill_balancer_actor::stateful_pointer<prefill_balancer_state>;

void dispatch(prefill_pointer self) {
  auto& st = self->state;
  for (auto& p : st.router->dispatch_prefills()) {
    if (auto q = st.queued_at.find(p.id); q != st.queued_at.end()) {
      st.demand->pulled(std::chrono::duration<double>(std::chrono::steady_clock::now() - q->second).count());
      st.queued_at.erase(q);
    }
    auto it = st.waiting.find(p.id);
    if (it == st.waiting.end())
      continue; // nobody waits any more: release it at once below
    auto grant = st.live.grant(p.where);
    if (grant) {
      log().debug("key={} prefill pulled by instance={} rank={}", p.id, p.where.instance, p.where.rank);
      it->second.deliver(std::move(*grant));
    } else {
      // The view lags the router by nothing (both are updated together), so this is a rank
      // that went away in the same view: the request asks again.
      it->second.deliver(make_error(errc::instance_down, "the prefill rank went away"));
      st.router->finish_prefill(p.id);
    }
    st.waiting.erase(it);
  }
  st.loads->set(st.router->prefill_loads());
}

void release(prefill_pointer self, uint64_t key) {
  auto& st = self->state;
  st.router->finish_prefill(key);
  st.queued_at.erase(key);
  if (auto gone = st.held.remove(key))
    self->demonitor(*gone);
  if (auto it = st.waiting.find(key); it != st.waiting.end()) {
    it->second.deliver(make_error(errc::no_capacity, "released before an instance pulled it"));
    st.waiting.erase(it);
  }
}

prefill_balancer_actor::behavior_type prefill_balancer(prefill_pointer self, balancer_actors_config cfg) {
  auto& st = self->state;
  st.router = std::make_unique<balancers::serving_router>(cfg.router);
  st.loads = cfg.prefill_loads;
  st.demand = cfg.demand;
  self->set_down_handler([=](caf::down_msg& dm) {
    for (auto k : self->state.held.keys_of(dm.source))
      release(self, k);
    dispatch(self);
  });
  self->delayed_send(self, cfg.round, round_atom::value);
  return {
    [=](place_atom, const prefill_ask& ask) -> caf::result<rank_grant> {
      auto& st = self->state;
      if (st.live.empty())
        return make_error(errc::no_capacity, "no prefill instance is running");
      auto requester = self->current_sender() ? self->current_sender()->address() : caf::actor_addr{};
      if (requester && st.held.add(requester, ask.key))
        self->monitor(requester);
      auto promise = self->make_response_promise<rank_grant>();
      st.waiting[ask.key] = promise;
      if (st.queued_at.emplace(ask.key, std::chrono::steady_clock::now()).second)
        st.demand->submitted(ask.missed_tokens);
      st.router->submit_prefill(ask.key, ask.input_len, ask.quota_s, ask.input_len - ask.missed_tokens);
      dispatch(self);
      return promise;
    },
    [=](release_atom, uint64_t key) {
      release(self, key);
      dispatch(self);
    },
    [=](view_atom, const membership_view& view) {
      auto& st = self->state;
      st.live.update(view, node_role::prefill);
      st.router->set_prefill_instances(st.live.shapes());
      dispatch(self);
    },
    [=](round_atom) {
      self->state.router->new_round();
      dispatch(self);
      self->delayed_send(self, cfg.round, round_atom::value);
    },
  };
}

} // namespace

prefill_balancer_actor spawn_prefill_balancer(caf::actor_system& sys, const balancer_actors_config& cfg) {
  return sys.spawn(prefill_balancer, cfg);
}

} // namespace deepinfer::actors
