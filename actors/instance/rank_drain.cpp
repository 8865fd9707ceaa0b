#include <algorithm>
#include <chrono>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "actors/errors.hpp"
#include "actors/instance/rank_state.hpp"
#include "actors/log.hpp"
#include "actors/transport/kv_transport.hpp"

// A decode rank's drain (issue 17, DESIGN §3): after the notice it decodes on for the grace
// period, then offers every sequence it holds to its sink (the request actor), which asks the
// decode balancer for a rank of another instance and answers with it; the sequence (its KV, both
// windows, its tokens, so its sampler position and stop state, plus its sampling settings) goes
// there over the same KV transports a prefill rank uses, and the new rank streams on to the same
// sink. engine::decode_drain decides when; this file moves.

namespace deepinfer::actors {

namespace {

using clock = engine::decode_drain::clock;

/// The drain's timer never spins faster than this (a due offer awaiting its answer keeps
/// `next_check` in the past until the answer comes).
constexpr auto min_timer = std::chrono::milliseconds{20};

/// Relays the drain's timer to the rank (`rank`, weakly): a delayed message to the rank itself
/// would hold it, and CAF 0.17 stops its clock before it waits for detached actors' threads, so
/// a rank (detached) with a timer pending at shutdown kept its process from ever exiting. The
/// relay is an event-based actor, which the system does not wait for; it goes with the rank.
caf::behavior drain_relay(caf::event_based_actor* self, caf::actor_addr rank) {
  self->monitor(rank);
  self->set_down_handler([=](caf::down_msg&) { self->quit(); });
  return {
    [=](drain_atom) {
      if (auto r = caf::actor_cast<rank_actor>(rank))
        self->send(r, drain_atom::value);
    },
  };
}

void arm_timer(rank_pointer self) {
  auto& st = self->state;
  if (st.drain_timer || !st.drain)
    return;
  const auto now = clock::now();
  auto next = st.drain->next_check(now);
  if (!next)
    return;
  if (!st.drain_relay)
    st.drain_relay = self->system().spawn(drain_relay, caf::actor_cast<caf::actor_addr>(self));
  st.drain_timer = true;
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(*next - now);
  caf::delayed_anon_send(st.drain_relay, std::max(wait, min_timer), drain_atom::value);
}

/// Sends the offer for `id` when the drain says it is due.
void offer(rank_pointer self, uint64_t id, decoding& d, clock::time_point now) {
  auto& st = self->state;
  if (d.moving || !st.drain->offer(id, now))
    return;
  d.moving = true;
  caf::send_as(caf::actor_cast<caf::actor>(self), d.sink, move_atom::value, id);
}

/// Answers the supervisors once the rank holds nothing more.
void check_drained(rank_pointer self) {
  auto& st = self->state;
  // A prefill rank (a pool instance given back) is drained once the jobs it holds are done.
  if (!st.drain || st.drained_promises.empty()
      || !st.drain->drained(clock::now(), st.active.size() + st.prefills.size()))
    return;
  log().info("rank={} drained: {} sequence(s) handed off", st.cfg.rank, st.handed_off);
  for (auto& p : st.drained_promises)
    p.deliver(st.handed_off);
  st.drained_promises.clear();
}

} // namespace

void begin_drain(rank_pointer self, std::chrono::milliseconds grace, caf::typed_response_promise<uint64_t> promise) {
  auto& st = self->state;
  if (!st.drain)
    st.drain.emplace(engine::decode_drain::config{});
  st.drain->notice(clock::now(), grace);
  st.drained_promises.push_back(std::move(promise));
  log().info("rank={} generation={} drain notice: grace {} ms, {} sequence(s) decoding", st.cfg.rank,
             st.cfg.generation, grace.count(), st.active.size());
  on_drain_timer(self);
}

void on_drain_timer(rank_pointer self) {
  auto& st = self->state;
  st.drain_timer = false;
  if (!st.drain)
    return;
  const auto now = clock::now();
  if (st.drain->handing_off(now))
    for (auto& [id, d] : st.active)
      offer(self, id, d, now);
  check_drained(self);
  arm_timer(self);
}

void offer_if_handing_off(rank_pointer self, uint64_t id) {
  auto& st = self->state;
  if (!st.drain)
    return;
  if (auto it = st.active.find(id); it != st.active.end())
    offer(self, id, it->second, clock::now());
}

void drain_forget(rank_pointer self, uint64_t id) {
  auto& st = self->state;
  if (!st.drain)
    return;
  st.drain->forget(id);
  check_drained(self);
}

void on_move(rank_pointer self, uint64_t id, const rank_grant& to) {
  auto& st = self->state;
  auto it = st.active.find(id);
  if (it == st.active.end() || !it->second.moving)
    return; // cancelled or gone meanwhile
  auto& d = it->second;
  d.moving = false;
  auto target = caf::actor_cast<caf::actor>(to.handle);
  if (!target || target == caf::actor_cast<caf::actor>(self)) {
    // No other rank has room: decode on here; the drain offers it again after its retry.
    log().debug("rank={} request {} stays: no other decode rank took it", st.cfg.rank, id);
    ensure_stepping(self);
    arm_timer(self);
    return;
  }
  // 1. Export the sequence as a prefill rank does (tokens, KV rows, both windows) and free it
  // here. Its full blocks are stored or queued first (all are, unless the write queue was full):
  // the new rank finds them stored and writes only those that fill there, and a request whose
  // handoff fails hits them when it is prefilled again.
  const auto t0 = std::chrono::steady_clock::now();
  store_filled(self, d);
  auto& transport = choose_kv_transport(target.node() == self->node(), !to.rdma.empty());
  auto bytes = st.engine->export_sequence(d.seq);
  st.engine->free(d.seq);
  kv_handoff h;
  h.id = id;
  h.cache_salt = d.salt;
  h.traffic = d.traffic;
  h.images = d.images;
  const auto size = bytes ? bytes->size() : 0;
  caf::error err = bytes ? transport.send(id, std::move(*bytes), h)
                         : make_error(errc::engine_export_failed, "cannot export the sequence for its handoff");
  auto sink = d.sink;
  auto sampling = std::move(d.sampling);
  st.active.erase(it);
  report(self);
  // 2. The KV to the new rank, then the word to the sink: it stops watching this rank for the
  // request (this node may stop now) and watches the new one.
  if (!err) {
    self->send(caf::actor_cast<rank_actor>(target), decode_atom::value, std::move(h), std::move(sampling),
               caf::actor_cast<caf::strong_actor_ptr>(sink));
    ++st.handed_off;
    log().info("rank={} request {} handed off to instance={} rank={} transport={} kv_bytes={} export_ms={:.1f}",
               st.cfg.rank, id, to.instance, to.rank, transport.name(), size,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  } else
    log().warn("rank={} request {} could not be handed off: {}", st.cfg.rank, id, self->system().render(err));
  caf::send_as(caf::actor_cast<caf::actor>(self), sink, move_atom::value, id, std::move(err));
  drain_forget(self, id);
}

} // namespace deepinfer::actors
