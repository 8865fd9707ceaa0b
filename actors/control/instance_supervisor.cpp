#include "actors/control/instance_supervisor.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/control/membership.hpp"
#include "actors/errors.hpp"
#include "actors/log.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/instance/ep_generation.hpp"
#include "actors/instance/rank.hpp"

namespace deepinfer::actors {

namespace {

using clock = std::chrono::steady_clock;

/// How long a draining prefill instance waits for jobs already granted to it.
constexpr std::chrono::milliseconds prefill_drain_settle{500};

struct supervisor_state {
  instance_supervisor_config cfg;
  node_agent_actor observer;
  instance_status status;
  // The current generation, index = rank. Shared with the exit functor, which runs after the
  // state is destroyed.
  std::shared_ptr<std::vector<rank_actor>> ranks = std::make_shared<std::vector<rank_actor>>();
  /// The current generation's EP group (null: one rank, or no engine); the last one's summary
  /// places the next.
  std::shared_ptr<ep_generation> ep;
  std::optional<ep_generation::summary> last_ep;
  /// Ranks that failed for good (they stay out of every later generation).
  uint32_t lost = 0;
  /// Ranks failed on purpose for a while: healthy again at these times (then the instance grows).
  std::vector<clock::time_point> out_until;
  /// Rank of the current generation -> how long it stays out once its failure arrives.
  std::map<uint32_t, std::chrono::milliseconds> failing_for;
  http::metrics_registry::gauge* ep_size = nullptr;
  /// A drain notice came (issue 17): every generation from now on reports `draining` and drains.
  bool draining = false;
  static inline const char* name = "deepinfer.instance_supervisor";
};

/// Ranks the next generation can have: the configured ones less those lost or still out.
uint32_t available_ranks(supervisor_state& st) {
  const auto now = clock::now();
  std::erase_if(st.out_until, [&](clock::time_point t) { return t <= now; });
  const auto out = st.lost + static_cast<uint32_t>(st.out_until.size());
  return out >= st.cfg.ranks ? 0 : st.cfg.ranks - out;
}

using supervisor_pointer = instance_supervisor_actor::stateful_pointer<supervisor_state>;

void publish(supervisor_pointer self) {
  if (!self->state.observer)
    return;
  // The handle travels only in reports: kept in our own state it would keep us alive.
  auto status = self->state.status;
  status.supervisor = caf::actor_cast<caf::strong_actor_ptr>(self);
  if (status.state == instance_state::running || status.state == instance_state::draining)
    for (auto& r : *self->state.ranks)
      status.ranks.push_back(caf::actor_cast<caf::strong_actor_ptr>(r));
  self->send(self->state.observer, report_atom::value, std::move(status));
}

void set_ep_size(supervisor_pointer self, uint32_t n) {
  if (auto* g = self->state.ep_size)
    g->set(static_cast<double>(n));
}

/// Pings every rank of the current generation; once all answered (their models loaded) the
/// instance is `running`. A rank that dies first is handled by its DOWN (a new generation).
void await_loaded(supervisor_pointer self) {
  auto& st = self->state;
  auto left = std::make_shared<std::size_t>(st.ranks->size());
  const auto generation = st.status.generation;
  const auto t0 = clock::now();
  for (auto& r : *st.ranks)
    self->request(r, caf::infinite, caf::ping_atom::value)
      .then(
        [=](rank_status&) {
          auto& st = self->state;
          if (--*left > 0 || st.status.generation != generation || st.status.state != instance_state::starting)
            return;
          st.status.state = instance_state::running;
          log().info("instance={} generation={} serving: {} rank(s) loaded the model in {} ms", st.cfg.instance,
                     generation, st.ranks->size(),
                     std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t0).count());
          publish(self);
        },
        [](caf::error&) {});
}

void start_generation(supervisor_pointer self, uint32_t n) {
  auto& st = self->state;
  st.ranks->clear();
  st.failing_for.clear();
  // An instance of N ranks is one EP group (DESIGN §5.4), placed from the last group's loads.
  st.ep.reset();
  if (n > 1 && !st.cfg.engine.model_dir.empty()) {
    engine::ep_group::config gc{static_cast<int>(n), st.cfg.ep, {}};
    if (st.last_ep)
      gc.initial_load = st.last_ep->loads;
    st.ep = std::make_shared<ep_generation>(std::move(gc));
  }
  for (uint32_t i = 0; i < n; ++i) {
    rank_config rc{i, n, st.status.generation, st.cfg.engine};
    rc.ep = st.ep;
    auto r = spawn_rank(self->system(), rc);
    // Monitored, not linked: a DOWN arrives for every exit reason, including exit_reason::kill,
    // which a link would propagate to us untrappably.
    self->monitor(r);
    st.ranks->push_back(r);
  }
  st.status.healthy_ranks = n;
  // Ranks load the model before their first message: `starting` (no rank handles in the view,
  // so nothing is routed here and the autoscaler counts it as not serving yet) until each has
  // answered a ping.
  const bool loads = !st.cfg.engine.model_dir.empty();
  st.status.state = st.draining ? instance_state::draining : loads ? instance_state::starting : instance_state::running;
  // A generation restarted during a drain hands off at once what reaches it.
  if (st.draining)
    for (auto& r : *st.ranks)
      caf::anon_send(r, drain_atom::value, int64_t{0});
  if (st.ep)
    log().info("instance={} generation={} {} ranks={}: one EP group, experts placed over them from {}",
               st.cfg.instance, st.status.generation, to_string(st.status.state), n,
               st.last_ep ? "the last generation's loads" : "uniform loads");
  else
    log().info("instance={} generation={} {} ranks={}", st.cfg.instance, st.status.generation,
               to_string(st.status.state), n);
  set_ep_size(self, n);
  publish(self);
  if (loads && st.status.state == instance_state::starting)
    await_loaded(self);
}

/// Stops the current generation's ranks (their group first, so none waits for another).
void stop_generation(supervisor_pointer self, const caf::actor_addr& already_down) {
  auto& st = self->state;
  if (st.ep) {
    st.ep->fail();
    st.last_ep = st.ep->read();
  }
  for (auto& r : *st.ranks)
    if (r.address() != already_down) {
      self->demonitor(r.address());
      self->send_exit(r, caf::exit_reason::user_shutdown);
    }
  st.ranks->clear();
  st.ep.reset();
}

/// Restarts with the ranks available after `restart_delay`, or gives up when none is.
void restart(supervisor_pointer self) {
  auto& st = self->state;
  const auto healthy = available_ranks(st);
  if (healthy == 0) {
    st.status.healthy_ranks = 0;
    st.status.state = instance_state::failed;
    set_ep_size(self, 0);
    publish(self);
    return;
  }
  st.status.state = instance_state::restarting;
  st.status.healthy_ranks = healthy;
  set_ep_size(self, 0);
  publish(self);
  self->delayed_send(self, st.cfg.restart_delay, restart_atom::value);
}

void on_rank_down(supervisor_pointer self, const caf::down_msg& dm) {
  auto& st = self->state;
  auto& ranks = *st.ranks;
  auto it = std::find_if(ranks.begin(), ranks.end(),
                         [&](const rank_actor& r) { return r.address() == dm.source; });
  if (it == ranks.end())
    return;  // a rank of an earlier generation that we stopped ourselves
  // Collateral: its group failed because another rank did, whose own DOWN names the failure.
  if (is(dm.reason, errc::ep_group_failed))
    return;
  auto failed = static_cast<uint32_t>(it - ranks.begin());
  // A rank failed on purpose for a while is out until then; any other failure is for good.
  if (auto f = st.failing_for.find(failed); f != st.failing_for.end()) {
    st.out_until.push_back(clock::now() + f->second);
    self->delayed_send(self, f->second, grow_atom::value);
  } else
    ++st.lost;
  // 1. The whole communication domain fails with one rank: stop the others of this generation.
  stop_generation(self, dm.source);
  st.status.last_failure = "rank " + std::to_string(failed) + ": " + self->system().render(dm.reason);
  log().warn("instance={} generation={} rank={} failed reason={} healthy={}", st.cfg.instance,
             st.status.generation, failed, st.status.last_failure, available_ranks(st));
  // 2. Restart with the healthy ranks, or give up when none is left.
  restart(self);
}

/// The drain notice (interfaces.hpp): `draining` in the view at once, so the routers pass the
/// instance over while its ranks decode on for the grace period and then hand off.
caf::typed_response_promise<uint64_t> drain(supervisor_pointer self, int64_t grace_ms) {
  auto& st = self->state;
  auto promise = self->make_response_promise<uint64_t>();
  if (st.cfg.role != node_role::decode && st.cfg.role != node_role::prefill) {
    promise.deliver(make_error(errc::engine_invalid_request, "only prefill and decode instances drain"));
    return promise;
  }
  auto grace = grace_ms >= 0 ? std::chrono::milliseconds{grace_ms} : st.cfg.drain_grace;
  // A prefill instance has nothing to hand off: it finishes what it holds. The short wait covers
  // jobs the balancer granted just before the view said `draining` (still on their way here).
  if (st.cfg.role == node_role::prefill)
    grace = std::min(grace, prefill_drain_settle);
  if (!st.draining) {
    st.draining = true;
    if (st.status.state == instance_state::running || st.status.state == instance_state::starting)
      st.status.state = instance_state::draining;
    publish(self);
  }
  log().info("instance={} generation={} draining: grace {} ms, then its requests move to other decode instances",
             st.cfg.instance, st.status.generation, grace.count());
  if (st.ranks->empty()) {
    promise.deliver(uint64_t{0});
    return promise;
  }
  struct tally {
    std::size_t left;
    uint64_t moved = 0;
  };
  auto t = std::make_shared<tally>(tally{st.ranks->size(), 0});
  auto one_done = [=, instance = st.cfg.instance](uint64_t moved) mutable {
    t->moved += moved;
    if (--t->left > 0)
      return;
    log().info("instance={} drained: {} request(s) handed off", instance, t->moved);
    promise.deliver(t->moved);
  };
  // No timeout: a rank that dies answers with an error (its promise breaks), and the caller
  // bounds its own wait (node_runtime::drain).
  for (auto& r : *st.ranks)
    self->request(r, caf::infinite, drain_atom::value, grace.count())
      .then([=](uint64_t moved) mutable { one_done(moved); }, [=](caf::error&) mutable { one_done(0); });
  return promise;
}

/// A rank's down time ended: grow back when the next generation would be larger.
void on_grow(supervisor_pointer self) {
  auto& st = self->state;
  const auto target = available_ranks(st);
  // Early (a timer fired before the clock passed the time): look again then.
  if (!st.out_until.empty()) {
    const auto next = *std::min_element(st.out_until.begin(), st.out_until.end());
    self->delayed_send(self, std::chrono::ceil<std::chrono::milliseconds>(next - clock::now()), grow_atom::value);
  }
  if ((st.status.state != instance_state::running && st.status.state != instance_state::starting)
      || target <= st.ranks->size())
    return; // restarting: that restart counts the rank in; failed: stays so; draining: leaving
  log().info("instance={} generation={} a rank is healthy again: growing from {} to {} ranks",
             st.cfg.instance, st.status.generation, st.ranks->size(), target);
  stop_generation(self, {});
  restart(self);
}

ep_report make_ep_report(supervisor_state& st) {
  ep_report r;
  r.instance = st.cfg.instance;
  r.generation = st.status.generation;
  r.ep_size = st.status.state == instance_state::running || st.status.state == instance_state::draining
                ? st.status.healthy_ranks
                : 0;
  r.configured_ranks = st.cfg.ranks;
  if (!st.ep)
    return r;
  auto sum = st.ep->read();
  r.steps = sum.steps;
  r.moe_lb = sum.moe_lb;
  r.replacements = sum.replacements;
  r.moved_slots = sum.moved_slots;
  for (auto b : sum.routed_expert_bytes)
    r.routed_expert_bytes.push_back(b);
  if (auto& p = sum.placement) {
    r.layers = static_cast<uint32_t>(p->layers());
    r.experts = static_cast<uint32_t>(p->experts());
    r.slots_per_rank = static_cast<uint32_t>(p->slots_per_rank());
    for (int l = 0; l < p->layers(); ++l)
      for (int k = 0; k < p->ranks(); ++k)
        for (int s = 0; s < p->slots_per_rank(); ++s)
          r.placement.push_back(p->expert(l, {k, s}));
  }
  return r;
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
  if (cfg.role == node_role::prefill && cfg.engine.prefill_cost)
    st.status.prefill_cost = cfg.engine.prefill_cost->coefficients();
  st.status.generation = 1;
  if (auto& m = cfg.engine.metrics)
    st.ep_size = &m->add_gauge("deepinfer_instance_ep_size",
                               "Expert-parallel size of the instance: ranks of its running "
                               "generation (0 while it restarts).", {"instance"})
                    .with({cfg.instance});
  self->set_down_handler([=](caf::down_msg& dm) { on_rank_down(self, dm); });
  // Stopping the supervisor stops its ranks.
  self->attach_functor([ranks = st.ranks](const caf::error&) {
    // Each rank fails its group as it stops, so none waits for another.
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
    [=](fail_atom, uint32_t rank, std::string& reason, int64_t down_ms) {
      auto& st = self->state;
      auto& ranks = *st.ranks;
      if (rank >= ranks.size())
        return;
      st.failing_for[rank] = std::chrono::milliseconds{std::max<int64_t>(down_ms, 0)};
      self->send(ranks[rank], fail_atom::value, std::move(reason));
    },
    [=](ep_atom) -> ep_report { return make_ep_report(self->state); },
    [=](restart_atom) {
      // Counted again now: a rank's down time may have ended during the delay.
      auto& st = self->state;
      const auto n = available_ranks(st);
      if (n == 0) {
        restart(self);
        return;
      }
      ++st.status.generation;
      start_generation(self, n);
    },
    [=](grow_atom) { on_grow(self); },
    [=](drain_atom, int64_t grace_ms) { return drain(self, grace_ms); },
  };
}

} // namespace

instance_supervisor_actor spawn_instance_supervisor(caf::actor_system& sys,
                                                    const instance_supervisor_config& cfg,
                                                    node_agent_actor observer) {
  return sys.spawn(instance_supervisor, cfg, std::move(observer));
}

} // namespace deepinfer::actors
