// The rank actor's part in its instance's expert-parallel group (DESIGN §5.4): joining the
// generation's group at load, ending every step that ran a forward, and joining the steps other
// ranks start (an idle rank's empty step). The step protocol itself is engine::ep_rank's.

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/instance/ep_generation.hpp"
#include "actors/instance/rank_state.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

/// Bounds of deepinfer_ep_exchange_seconds: 10 µs .. 1 s.
std::vector<double> exchange_bounds() {
  return {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 1.0};
}

} // namespace

ep_fail_on_exit::~ep_fail_on_exit() {
  if (ep)
    ep->fail();
}

bool join_ep(rank_pointer self) {
  auto& st = self->state;
  auto& gen = st.cfg.ep;
  if (!gen || !st.engine)
    return true;
  // Another rank's thread wakes this one for a step it started: a message, so the step runs on
  // this actor's own thread. A weak address: the group must not keep a stopped rank alive.
  auto wake = [addr = self->address()](int64_t step) {
    if (auto me = caf::actor_cast<rank_actor>(addr))
      caf::anon_send(me, ep_wake_atom::value, step);
  };
  st.member = gen->join(*st.engine, static_cast<int>(st.cfg.rank), std::move(wake));
  if (st.member == nullptr) {
    self->quit(make_error(errc::ep_group_failed, "its expert-parallel group failed before it joined"));
    return false;
  }
  st.ep_guard.ep = gen;
  if (auto& m = st.cfg.engine.metrics; m && st.cfg.rank == 0) {
    std::vector<std::string> labels{st.cfg.engine.instance};
    st.moe_lb_gauge = &m->add_gauge("deepinfer_moe_lb",
                                    "MoE load balance of the instance's EP group: the slowest rank's "
                                    "routed tokens over the mean, last window.", {"instance"})
                         .with(labels);
    st.moe_lb_gauge->set(1.0); // balanced until the first step says otherwise (0 is no ratio)
    st.replacements_counter = &m->add_counter("deepinfer_expert_replacements_total",
                                              "Live re-placements of the instance's routed experts.",
                                              {"instance"})
                                 .with(labels);
    st.exchange_histogram = &m->add_histogram("deepinfer_ep_exchange_seconds",
                                              "Time per step of the EP group's all-to-all exchange "
                                              "(dispatch and combine, waiting included; mean over ranks).",
                                              {"instance"}, exchange_bounds())
                                 .with(labels);
  }
  return true;
}

namespace {

/// What ending a group step touches: the group, its member and rank 0's figures. Copied out of
/// the rank's state, so the decode loop's thread ends its steps with it.
struct group_step {
  ep_generation* gen = nullptr;
  engine::ep_rank* member = nullptr;
  uint32_t rank = 0, generation = 0;
  std::string instance;
  http::metrics_registry::gauge* moe_lb_gauge = nullptr;
  http::metrics_registry::counter* replacements_counter = nullptr;
  http::metrics_registry::histogram* exchange_histogram = nullptr;
};

group_step group_step_of(const rank_state& st) {
  return {st.cfg.ep.get(), st.member, st.cfg.rank, st.cfg.generation, st.cfg.engine.instance,
          st.moe_lb_gauge, st.replacements_counter, st.exchange_histogram};
}

/// Ends the member's step (false: the group failed) and publishes its figures.
bool end_group_step(const group_step& g) {
  const auto stats = g.member->end_step();
  if (stats.failed) {
    log().warn("rank={} generation={} its expert-parallel group failed; stopping", g.rank, g.generation);
    return false;
  }
  g.gen->publish(*g.member, stats);
  if (g.moe_lb_gauge != nullptr) {
    g.moe_lb_gauge->set(stats.moe_lb);
    g.exchange_histogram->observe(stats.exchange_seconds);
    if (stats.replaced)
      g.replacements_counter->inc();
  }
  if (stats.replaced && g.rank == 0)
    log().info("instance={} generation={} experts re-placed at step {}: moe_lb={:.3f} moved_slots={}", g.instance,
               g.generation, stats.step, stats.moe_lb, stats.moves);
  return true;
}

} // namespace

bool end_ep_step(rank_pointer self, bool force) {
  auto& st = self->state;
  auto* member = st.member;
  if (member == nullptr || (!force && !member->in_step()))
    return true;
  // Serving a step another rank started, and nothing of this rank's ran in it: the serving
  // goes on (its next round is a message away) and ends the step.
  if (!force && st.ep_serving && !member->forwarded_in_step())
    return true;
  st.ep_serving = false; // forwards of its own joined the step: it ends here, the chain stops
  if (!end_group_step(group_step_of(st))) {
    // The step's forwards computed garbage: nothing of it leaves this rank. The supervisor
    // restarts the instance with its healthy ranks; requests here are rerouted.
    self->quit(make_error(errc::ep_group_failed, "its expert-parallel group failed"));
    return false;
  }
  return true;
}

std::function<bool(int64_t wake)> ep_step_ender(rank_pointer self) {
  if (self->state.member == nullptr)
    return nullptr;
  return [g = group_step_of(self->state)](int64_t wake) {
    if (g.member->in_step() || wake > g.member->steps())
      return end_group_step(g);
    return true; // no forwards, and any wake was for a step this rank has ended
  };
}

void on_ep_wake(rank_pointer self, int64_t step) {
  if (auto& loop = self->state.loop) {
    loop->wake(step); // the loop's thread takes part, never waiting for this one
    return;
  }
  auto& st = self->state;
  auto* member = st.member;
  // Stale: this rank started that step itself (its own forwards) and has ended it, or it is
  // taking part already.
  if (member == nullptr || step <= member->steps() || st.ep_serving)
    return;
  // One round per message: between two rounds this rank's mailbox is read, so a job that
  // arrives while the others compute runs its forward in their step (its rounds join the
  // step's remaining ones) instead of waiting for the step to end and then for a whole step of
  // theirs beside it (issue 15: a short prompt beside a long prompt's chunks).
  st.ep_serving = true;
  on_ep_serve(self, ++st.ep_serve_chain);
}

void on_ep_serve(rank_pointer self, uint64_t chain) {
  auto& st = self->state;
  if (!st.ep_serving || chain != st.ep_serve_chain || st.member == nullptr)
    return; // the step ended otherwise (forwards of this rank's ended it)
  if (!st.member->serve_round()) {
    self->send(self, ep_serve_atom::value, chain);
    return;
  }
  end_ep_step(self, true);
}

} // namespace deepinfer::actors
