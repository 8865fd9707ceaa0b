// A draining decode rank's handoff, as the request sees it (issue 17): the rank offers a
// sequence, the request asks the decode balancer for a rank of another instance, the old rank
// sends the KV there, the new rank streams on.
#include <algorithm>
#include <chrono>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/entrypoint/balancer_claim.hpp"
#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

void on_move_offer(request_pointer self, uint64_t job) {
  auto& st = self->state;
  auto from = caf::actor_cast<caf::actor>(self->current_sender());
  if (!from)
    return;
  auto old_rank = caf::actor_cast<rank_actor>(from);
  auto* found = st.sample_of_job(job);
  if (found == nullptr || found->done || st.done || from != found->decode_rank) {
    // An abandoned attempt's sequence (or one of a sample or request that ended): stop it there.
    self->send(old_rank, cancel_atom::value, job);
    return;
  }
  const int i = found->index;
  auto& sm = *found;
  auto stay = [=] { self->send(old_rank, move_atom::value, job, rank_grant{}); };
  auto view = st.ctx->cluster->get().view;
  if (!view.decode_balancer) {
    stay();
    return;
  }
  const auto kv = static_cast<int64_t>(st.prompt.size() + sm.generated.size());
  const auto left = std::max<int64_t>(0, sm.sampling.max_tokens - static_cast<int64_t>(sm.generated.size()));
  // The instance it leaves: the whole instance drains, so a rank of it is no place to go (a
  // balancer that has not heard of the drain yet may offer one). A sample that rode on sample
  // 0's claim gets its own (its own key) for the new rank.
  const auto& held = sm.decode_claim ? sm.decode_claim : sample(self, 0).decode_claim;
  const auto leaving = held ? held->instance : std::string{};
  // The same key: the balancer's place moves the claim (it finishes the old placement first).
  if (!sm.decode_claim || sm.decode_claim->balancer() != view.decode_balancer)
    sm.decode_claim = std::make_unique<balancer_claim>(view.decode_balancer, balancer_key(self, sm.job));
  sm.decode_claim->kv_tokens = kv;
  sm.decode_claim->reserve_tokens = kv + left;
  sm.move_offered = std::chrono::steady_clock::now();
  decode_claim ask{sm.decode_claim->key(), {}, 0, kv, kv + left};
  self->request(caf::actor_cast<decode_balancer_actor>(view.decode_balancer), handle_timeout, place_atom::value, ask)
    .then(
      [=](rank_grant& g) {
        auto& sm = sample(self, i);
        if (!current(self, i, job) || sm.decode_rank != from) {
          self->send(old_rank, cancel_atom::value, job);
          return;
        }
        auto to = caf::actor_cast<caf::actor>(g.handle);
        if (!usable(self, g.handle, g.instance) || to == from || g.instance == leaving) {
          sm.move_offered.reset();
          stay();
          return;
        }
        sm.decode_claim->instance = g.instance;
        sm.decode_claim->rank = g.rank;
        sm.rides = false; // on a rank and a claim of its own from now on
        // The new rank from now on (its tokens, its death); the old one until it says the KV left.
        sm.moving_from = from;
        sm.decode_rank = to;
        self->monitor(sm.decode_rank);
        if (sm.rdma_failed)
          g.rdma.clear();
        log().debug("request={} sample {} moving from a draining decode rank to instance={} rank={}", self->state.id,
                    i, g.instance, g.rank);
        self->send(old_rank, move_atom::value, job, std::move(g));
      },
      [=](caf::error& e) {
        auto& sm = sample(self, i);
        if (!current(self, i, job) || sm.decode_rank != from)
          return;
        log().debug("request={} no decode rank to move to ({}); it stays for now", self->state.id,
                    self->system().render(e));
        sm.move_offered.reset();
        stay();
      });
}

void on_moved(request_pointer self, uint64_t job, const caf::error& err) {
  auto& st = self->state;
  auto* sm = st.sample_of_job(job);
  if (sm == nullptr || sm->done || st.done || !sm->moving_from
      || caf::actor_cast<caf::actor_addr>(self->current_sender()) != sm->moving_from.address())
    return;
  auto old = std::exchange(sm->moving_from, nullptr);
  unwatch(self, old);
  if (err) {
    log().warn("request={} handoff failed: {}; resubmitting sample {}", st.id, self->system().render(err), sm->index);
    attempt(self, sm->index);
  }
}

void on_handoff_done(request_pointer self, int i) {
  auto& st = self->state;
  auto& sm = sample(self, i);
  if (!sm.move_offered)
    return;
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - *sm.move_offered).count();
  sm.move_offered.reset();
  // Tokens from the new rank: the KV has left the old one, whatever becomes of it now.
  if (sm.moving_from)
    unwatch(self, std::exchange(sm.moving_from, nullptr));
  st.ctx->handoffs->inc();
  st.ctx->handoff_seconds->observe(took);
  log().info("request={} id={} handed off: {} tokens so far, stream paused {:.1f} ms (choice {})", st.id,
             st.public_id, sm.generated.size(), took * 1000.0, i);
}

} // namespace deepinfer::actors
