#include "actors/rank.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/errors.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

struct rank_state {
  rank_config cfg;
  uint64_t steps = 0;
  static inline const char* name = "deepinfer.rank";
};

rank_actor::behavior_type rank_behavior(rank_actor::stateful_pointer<rank_state> self,
                                        rank_config cfg) {
  self->state.cfg = cfg;
  return {
    [=](caf::ping_atom) -> rank_status {
      auto& s = self->state;
      return {s.cfg.rank, s.cfg.ep_size, s.cfg.generation, s.steps};
    },
    [=](fail_atom, std::string& reason) {
      log().warn("rank={} generation={} failing on purpose reason={}", self->state.cfg.rank,
                 self->state.cfg.generation, reason);
      self->quit(make_error(errc::rank_failed, std::move(reason)));
    },
    [=](echo_atom, byte_payload& payload) -> byte_payload {
      ++self->state.steps;
      return std::move(payload);
    },
    [=](sink_atom, const byte_payload& payload) -> uint64_t {
      ++self->state.steps;
      return payload.bytes.size();
    },
  };
}

} // namespace

rank_actor spawn_rank(caf::actor_system& sys, const rank_config& cfg) {
  return sys.spawn(rank_behavior, cfg);
}

} // namespace deepinfer::actors
