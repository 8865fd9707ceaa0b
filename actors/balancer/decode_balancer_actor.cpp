#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <fmt/format.h>

#include "actors/balancer/balancer_actors.hpp"
#include "actors/balancer/balancer_view.hpp"
#include "actors/balancer/requester_keys.hpp"
#include "actors/errors.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

struct decode_balancer_state {
  std::unique_ptr<balancers::serving_router> router;
  balancer_view live;
  /// Claims each requester holds, so its DOWN releases them all.
  requester_keys held;
  std::shared_ptr<balancer_loads> loads;
  static inline const char* name = "deepinfer.decode_balancer";
};

using decode_pointer = decode_balancer_actor::stateful_pointer<decode_balancer_state>;

void own(decode_pointer self, uint64_t key) {
  auto sender = self->current_sender();
  if (sender && !self->state.held.owns(key) && self->state.held.add(sender->address(), key))
    self->monitor(sender->address());
}

void release(decode_pointer self, uint64_t key) {
  self->state.router->finish_decode(key);
  if (auto gone = self->state.held.remove(key))
    self->demonitor(*gone);
}

decode_balancer_actor::behavior_type decode_balancer(decode_pointer self, balancer_actors_config cfg) {
  auto& st = self->state;
  st.router = std::make_unique<balancers::serving_router>(cfg.router);
  st.loads = cfg.decode_loads;
  self->set_down_handler([=](caf::down_msg& dm) {
    for (auto k : self->state.held.keys_of(dm.source))
      release(self, k);
    self->state.loads->set(self->state.router->decode_loads());
  });
  return {
    [=](place_atom, const decode_claim& ask) -> caf::result<rank_grant> {
      auto& st = self->state;
      if (st.live.empty())
        return make_error(errc::no_capacity, "no decode instance is running");
      auto where = st.router->place_decode(ask.key, ask.kv_tokens, ask.reserve_tokens);
      if (!where) {
        int64_t largest = 0;
        for (const auto& l : st.router->decode_loads())
          largest = std::max(largest, l.kv_capacity);
        if (ask.reserve_tokens > largest)
          return make_error(errc::no_rank_large_enough,
                            fmt::format("it may reach {} KV tokens and the largest decode rank's pool holds {}",
                                        ask.reserve_tokens, largest));
        return make_error(errc::no_capacity, "every decode rank is full (batch or KV pool)");
      }
      auto grant = st.live.grant(*where);
      if (!grant) {
        st.router->finish_decode(ask.key);
        return make_error(errc::instance_down, "the decode rank went away");
      }
      own(self, ask.key);
      st.loads->set(st.router->decode_loads());
      log().debug("key={} decode placed instance={} rank={} kv={}", ask.key, where->instance, where->rank,
                  ask.kv_tokens);
      return std::move(*grant);
    },
    [=](grow_atom, const decode_claim& c) {
      auto& st = self->state;
      if (!st.held.owns(c.key)) {
        // A claim this balancer never placed: it restarted. Take it in (soft state).
        if (!st.router->adopt_decode(c.key, {c.instance, c.rank}, c.kv_tokens, c.reserve_tokens))
          return;
        own(self, c.key);
      } else {
        st.router->grow_decode(c.key, c.kv_tokens);
      }
      st.loads->set(st.router->decode_loads());
    },
    [=](release_atom, uint64_t key) {
      release(self, key);
      self->state.loads->set(self->state.router->decode_loads());
    },
    [=](view_atom, const membership_view& view) {
      auto& st = self->state;
      st.live.update(view, node_role::decode);
      st.router->set_decode_instances(st.live.shapes());
      st.loads->set(st.router->decode_loads());
    },
  };
}

} // namespace

decode_balancer_actor spawn_decode_balancer(caf::actor_system& sys, const balancer_actors_config& cfg) {
  return sys.spawn(decode_balancer, cfg);
}

} // namespace deepinfer::actors
