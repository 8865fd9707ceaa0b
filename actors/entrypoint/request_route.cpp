#include <algorithm>
#include <chrono>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "actors/errors.hpp"
#include "actors/control/live_instances.hpp"
#include "actors/log.hpp"
#include "kv/prefix_cache.hpp"
#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "actors/swa/swa_shard.hpp"

// The routing half of the request actor: each attempt gets a decode rank and a prefill rank from
// the routers, the SWA directory's answer, and its prefill job; a lost rank means another attempt.

namespace deepinfer::actors {

namespace {

/// Attempts of one request (its attempt id has 4 bits in the job id), within `instance_wait`.
constexpr int max_attempts = 15;
/// Pause before placing again when no instance can take the request (restarting, all full).
constexpr auto retry_delay = std::chrono::milliseconds(100);
/// After a lost rank the next attempt waits 2^(k-2) x 50 ms (k = its number, from 2), at most
/// 1.6 s: a rank of a node that just died may still be in the view for a heartbeat, and an
/// instance that restarts needs a moment, so attempts spread over seconds instead of being
/// spent in milliseconds on ranks that are gone (issue 17).
constexpr auto backoff_base = std::chrono::milliseconds(50);
constexpr auto backoff_cap = std::chrono::milliseconds(1600);

std::chrono::milliseconds backoff(int attempt) {
  auto d = backoff_base;
  for (int k = 2; k < attempt && d < backoff_cap; ++k)
    d *= 2;
  return std::min(d, backoff_cap);
}
/// The decode balancer hears of a request's KV growth every this many tokens (a block).
constexpr int64_t growth_report_tokens = 128;
/// Limit for the SWA directory's answer; without one the prefill simply has no remote snapshot.
constexpr auto swa_lookup_timeout = std::chrono::milliseconds(300);

/// Nothing can take sample `i` now: place it again shortly, within the configured wait.
void wait_for_capacity(request_pointer self, int i, const std::string& what) {
  auto& st = self->state;
  auto& sm = st.samples[static_cast<std::size_t>(i)];
  sm.prefill_claim.reset();
  sm.decode_claim.reset();
  if (std::chrono::steady_clock::now() - st.arrived > st.ctx->cfg.instance_wait) {
    fail(self, 503, "no " + what + " can take the request now; try again later");
    return;
  }
  self->delayed_send(self, retry_delay, restart_atom::value, i);
}

/// The samples whose current attempt rides on sample 0's first one (besides sample 0).
std::vector<int> riders(request_pointer self) {
  std::vector<int> out;
  for (auto& s : self->state.samples)
    if (s.rides)
      out.push_back(s.index);
  return out;
}

/// No live decode rank's pool can hold what sample `i`'s claim may reach. Samples riding on
/// sample 0 share its rank (n copies of the KV): they stop riding and each is placed on its
/// own, so `n` choices fit where one does. One sample that fits nowhere is the request's own
/// size: a 400 at once, since waiting for capacity cannot help.
void too_large_for_one_rank(request_pointer self, int i, const caf::error& e) {
  auto& sm = sample(self, i);
  sm.decode_claim.reset();
  const auto alone = i == 0 ? riders(self) : std::vector<int>{};
  if (alone.empty()) {
    fail(self, 400, "the request does not fit on any decode rank: " + error_text(e) +
                      "; lower max_tokens (or the prompt)");
    return;
  }
  for (int r : alone)
    sample(self, r).rides = false;
  place(self, i);
  for (int r : alone)
    place(self, r);
}

} // namespace

uint64_t balancer_key(request_pointer self, uint64_t job) {
  return self->state.ctx->balancer_tag ^ job;
}

namespace {

/// Where the balancers put one attempt, and what the prefill job carries.
struct placement {
  uint64_t job = 0;
  std::vector<int32_t> tokens;
  /// What the prefix cache holds of `tokens` (CHECK, metadata only).
  int64_t hit_length = 0;
  caf::strong_actor_ptr decode_rank;
  /// The SWA directory's answer: the window ending at `snapshot_end` lives at `snapshot_owner`.
  int64_t snapshot_end = 0;
  caf::strong_actor_ptr snapshot_owner;
  /// The decode node's RDMA endpoint (empty: none, or RDMA is avoided for this request).
  std::string decode_rdma;
};

} // namespace

/// False for a rank this request saw die, unless the node of its `instance` registered again
/// after that (then it is forgotten as dead: the chaos test's SIGSTOP past the heartbeat timeout
/// left a thawed decode node serving handoffs that every request it had dropped refused, until
/// their waits ran out with 503s).
bool usable(request_pointer self, const caf::strong_actor_ptr& rank, const std::string& instance) {
  if (!rank)
    return false;
  auto& dead = self->state.dead;
  auto it = dead.find(caf::actor_cast<caf::actor_addr>(rank));
  if (it == dead.end())
    return true;
  const auto view = self->state.ctx->cluster->get().view;
  auto inst = std::find_if(view.instances.begin(), view.instances.end(),
                           [&](const instance_status& x) { return x.instance == instance; });
  if (inst == view.instances.end())
    return false;
  auto node = std::find_if(view.nodes.begin(), view.nodes.end(),
                           [&](const node_status& n) { return n.info.name == inst->node; });
  if (node == view.nodes.end() || node->state != node_state::alive || node->since_ms <= it->second)
    return false;
  dead.erase(it);
  return true;
}

namespace {

/// Sends sample `i`'s prefill job to the prefill rank `pp`; it hands the KV to the decode rank
/// (for sample 0's first attempt: one sequence per sample, from one prefill).
void send_prefill(request_pointer self, int i, const placement& at, const caf::strong_actor_ptr& pp) {
  auto& st = self->state;
  auto& sm = sample(self, i);
  sm.prefill_rank = caf::actor_cast<caf::actor>(pp);
  self->monitor(sm.prefill_rank);
  prefill_job pj;
  pj.id = at.job;
  pj.tokens = at.tokens;
  pj.sampling = sm.sampling;
  pj.sampling.max_tokens = sm.sampling.max_tokens - static_cast<int32_t>(sm.generated.size());
  pj.decode_rank = at.decode_rank;
  pj.sink = caf::actor_cast<caf::strong_actor_ptr>(self);
  pj.snapshot_end = at.snapshot_end;
  pj.snapshot_owner = at.snapshot_owner;
  pj.decode_rdma = at.decode_rdma;
  pj.prompt_length = static_cast<int64_t>(st.prompt.size());
  pj.cache_salt = st.salt;
  pj.traffic = st.traffic;
  // An image a vision rank encoded travels as its embeddings alone: the prefill rank reads
  // nothing else of it, and its pixels (megabytes) stay in st.images for another attempt.
  pj.images.reserve(st.images.size());
  for (auto& im : st.images) {
    if (im.embedding.empty()) {
      pj.images.push_back(im);
      continue;
    }
    std::vector<uint8_t> pixels;
    pixels.swap(im.rgb); // out of the copy, back after it
    pj.images.push_back(im);
    im.rgb.swap(pixels);
  }
  for (int r : riders(self)) {
    auto& rider = sample(self, r);
    rider.decode_rank = sm.decode_rank; // the same rank: its death ends every sample on it
    pj.samples.push_back({rider.job, rider.sampling.seed, -1, false, {}});
  }
  auto job = at.job;
  pj.sent_unix_us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
  self->request(caf::actor_cast<rank_actor>(pp), st.ctx->cfg.prefill_timeout, prefill_atom::value, std::move(pj))
    .then(
      [=](prefill_result& r) {
        if (current(self, i, job))
          on_prefilled(self, i, r);
      },
      [=](caf::error& e) {
        // The prefill rank died or timed out: try again (the cache makes it cheap).
        if (!current(self, i, job))
          return;
        log().info("request={} prefill lost: {}", self->state.id, self->system().render(e));
        prefill_lost(self, i);
      });
}

/// 3. The prefill balancer queues the job until a prefill instance with compute-quota left
/// pulls it (DESIGN §6.1: backpressure instead of a push into a rank's queue).
void ask_prefill_balancer(request_pointer self, int i, placement at, const caf::strong_actor_ptr& balancer) {
  auto& st = self->state;
  close_stage(self, i, request_timeline::stage::swa); // its lookup, when it asked (else ~0)
  const auto length = static_cast<int64_t>(at.tokens.size());
  prefill_ask ask{balancer_key(self, at.job), length,
                  st.ctx->quota->cost(static_cast<double>(length - at.hit_length), static_cast<double>(at.hit_length)),
                  length - at.hit_length};
  sample(self, i).prefill_claim = std::make_unique<balancer_claim>(balancer, ask.key);
  self->request(caf::actor_cast<prefill_balancer_actor>(balancer), st.ctx->cfg.prefill_timeout, place_atom::value, ask)
    .then(
      [=](rank_grant& g) {
        if (!current(self, i, at.job))
          return;
        close_stage(self, i, request_timeline::stage::prefill_pick);
        if (!usable(self, g.handle, g.instance)) {
          wait_for_capacity(self, i, "prefill rank");
          return;
        }
        send_prefill(self, i, at, g.handle);
      },
      [=](caf::error& e) {
        if (!current(self, i, at.job))
          return;
        log().debug("request={} prefill balancer: {}", self->state.id, self->system().render(e));
        wait_for_capacity(self, i, "prefill instance");
      });
}

/// 2. Asks the SWA directory (DESIGN §1 step 3) which node holds the window ending at the hit,
/// whose block key CHECK gave. Without an answer in time the prefill rank uses its own memory or
/// replays the window.
void ask_swa_directory(request_pointer self, int i, const membership_view& view, placement at,
                       const kv::prefix_cache::check_result& hit) {
  auto key = hit.key ? std::optional{*hit.key} : std::nullopt;
  auto shard = key ? swa_shard_for(view, *key) : nullptr;
  auto balancer = view.prefill_balancer;
  if (!shard) {
    ask_prefill_balancer(self, i, std::move(at), balancer);
    return;
  }
  self->request(caf::actor_cast<swa_shard_actor>(shard), swa_lookup_timeout, swa_lookup_atom::value, *key)
    .then(
      [=](caf::strong_actor_ptr& owner) mutable {
        if (!current(self, i, at.job))
          return;
        if (owner) {
          at.snapshot_end = hit.length;
          at.snapshot_owner = owner;
        }
        ask_prefill_balancer(self, i, at, balancer);
      },
      [=](caf::error&) {
        if (current(self, i, at.job))
          ask_prefill_balancer(self, i, at, balancer);
      });
}

} // namespace

/// Places sample `i`'s current attempt: 1. the decode balancer picks a decode rank with room
/// for its KV (and the KV of the samples that ride on it), 2. the SWA directory says where its
/// window is, 3. the prefill balancer hands it to a prefill rank when one pulls it; the prefill
/// rank hands the KV to the decode rank itself.
void place(request_pointer self, int i) {
  auto& st = self->state;
  auto& sm = sample(self, i);
  auto view = st.ctx->cluster->get().view;
  const bool no_prefill = live_instances(view, node_role::prefill).empty();
  if (no_prefill || live_instances(view, node_role::decode).empty()) {
    wait_for_capacity(self, i, no_prefill ? "prefill instance" : "decode instance");
    return;
  }
  if (!view.prefill_balancer || !view.decode_balancer) {
    wait_for_capacity(self, i, "balancer");
    return;
  }
  placement at;
  at.job = sm.job;
  at.tokens = st.prompt;
  at.tokens.insert(at.tokens.end(), sm.generated.begin(), sm.generated.end());
  const auto prompt_length = static_cast<int64_t>(st.prompt.size());
  auto hit = st.ctx->cache ? st.ctx->cache->check(at.tokens, prompt_length, st.salt, st.image_marks) : kv::prefix_cache::check_result{};
  // A prompt to score prefills cold whatever the cache holds (rank_prefill.cpp): priced so, and
  // its images all encoded (none is inside a hit).
  const bool scored = sm.sampling.prompt_logprobs >= 0 && sm.generated.empty();
  if (send_to_vision(self, i, view, scored ? 0 : hit.length))
    return;
  at.hit_length = scored ? 0 : hit.length;
  // The rank must hold all it may reach: what is there now plus the tokens still to generate,
  // for this sample and each that rides on it (each its own copy of the prompt's KV).
  const auto left = std::max<int64_t>(0, sm.sampling.max_tokens - static_cast<int64_t>(sm.generated.size()));
  const auto copies = static_cast<int64_t>(1 + (i == 0 ? riders(self).size() : 0));
  decode_claim ask{balancer_key(self, at.job), {}, 0, copies * static_cast<int64_t>(at.tokens.size()),
                   copies * (static_cast<int64_t>(at.tokens.size()) + left)};
  sm.decode_claim = std::make_unique<balancer_claim>(view.decode_balancer, ask.key);
  sm.decode_claim->kv_tokens = ask.kv_tokens;
  sm.decode_claim->reserve_tokens = ask.reserve_tokens;
  self->request(caf::actor_cast<decode_balancer_actor>(view.decode_balancer), handle_timeout, place_atom::value, ask)
    .then(
      [=](rank_grant& g) mutable {
        auto& sm = sample(self, i);
        if (!current(self, i, at.job) || !sm.decode_claim)
          return;
        close_stage(self, i, request_timeline::stage::decode_pick);
        if (!usable(self, g.handle, g.instance)) {
          wait_for_capacity(self, i, "decode rank");
          return;
        }
        sm.decode_claim->instance = g.instance;
        sm.decode_claim->rank = g.rank;
        sm.decode_rank = caf::actor_cast<caf::actor>(g.handle);
        self->monitor(sm.decode_rank);
        at.decode_rank = g.handle;
        if (!sm.rdma_failed)
          at.decode_rdma = g.rdma;
        ask_swa_directory(self, i, view, std::move(at), hit);
      },
      [=](caf::error& e) {
        if (!current(self, i, at.job))
          return;
        log().debug("request={} decode balancer: {}", self->state.id, self->system().render(e));
        if (is(e, errc::no_rank_large_enough)) {
          too_large_for_one_rank(self, i, e);
          return;
        }
        wait_for_capacity(self, i, "decode rank");
      });
}

void report_growth(request_pointer self, int i) {
  auto& st = self->state;
  auto& c = sample(self, i).decode_claim;
  if (!c || c->instance.empty())
    return;
  // Sample 0's claim holds the KV of the samples that ride on it too.
  auto kv = static_cast<int64_t>(st.prompt.size() + sample(self, i).generated.size());
  if (i == 0)
    for (int r : riders(self))
      kv += static_cast<int64_t>(st.prompt.size() + sample(self, r).generated.size());
  if (kv - c->kv_tokens < growth_report_tokens)
    return;
  c->kv_tokens = kv;
  self->send(caf::actor_cast<decode_balancer_actor>(c->balancer()), grow_atom::value,
             decode_claim{c->key(), c->instance, c->rank, kv, c->reserve_tokens});
}

void prefill_lost(request_pointer self, int i) {
  auto& sm = sample(self, i);
  if (sm.prefill_rank) {
    self->demonitor(sm.prefill_rank);
    sm.prefill_rank = nullptr;
  }
  const bool carried = i == 0 && sm.attempts == 1;
  attempt(self, i);
  if (!carried)
    return;
  for (auto& s : self->state.samples)
    if (s.rides && !s.prefilled && !s.done && !self->state.done)
      attempt(self, s.index);
}

void unwatch(request_pointer self, const caf::actor& rank) {
  if (!rank)
    return;
  for (const auto& o : self->state.samples)
    if (o.decode_rank == rank || o.prefill_rank == rank || o.moving_from == rank)
      return;
  self->demonitor(rank);
}

/// One attempt: prefill prompt + tokens generated so far, then decode the rest.
void attempt(request_pointer self, int i) {
  auto& st = self->state;
  auto& sm = sample(self, i);
  sm.move_offered.reset();
  if (sm.moving_from) {
    self->send(caf::actor_cast<rank_actor>(sm.moving_from), cancel_atom::value, sm.job);
    unwatch(self, std::exchange(sm.moving_from, nullptr));
  }
  if (sm.decode_rank) {
    // Samples that rode together share the rank (and its one monitor): only this sample's
    // sequence stops there, and the monitor stays while another sample decodes on it.
    self->send(caf::actor_cast<rank_actor>(sm.decode_rank), cancel_atom::value, sm.job);
    unwatch(self, std::exchange(sm.decode_rank, nullptr));
  }
  if (sm.prefill_rank) {
    // The last attempt's prefill (timed out) would only hold blocks there.
    self->send(caf::actor_cast<rank_actor>(sm.prefill_rank), cancel_atom::value, sm.job);
    self->demonitor(sm.prefill_rank);
    sm.prefill_rank = nullptr;
  }
  sm.prefill_claim.reset();
  sm.decode_claim.reset();
  sm.rides = false;
  ++sm.attempts;
  const auto waited = std::chrono::steady_clock::now() - st.arrived;
  if (sm.attempts > max_attempts || (sm.attempts > 2 && waited > st.ctx->cfg.instance_wait)) {
    fail(self, 503, "request failed after " + std::to_string(sm.attempts - 1) +
                      " attempts: its ranks kept failing; retry later");
    return;
  }
  // Unique per entrypoint: the request, the sample (< 16) and the attempt (< 16).
  sm.job = (st.id * 16 + static_cast<uint64_t>(i)) * 16 + static_cast<uint64_t>(sm.attempts);
  sm.prefilled = false;
  sm.decoding = false;
  sm.early.clear();
  sm.transport.reset();
  if (sm.attempts > 1) {
    self->delayed_send(self, backoff(sm.attempts), restart_atom::value, i);
    return;
  }
  if (i > 0) {
    // The first attempt of every other sample rides on sample 0's: one prefill for all.
    sm.rides = true;
    return;
  }
  place(self, 0);
}

} // namespace deepinfer::actors
