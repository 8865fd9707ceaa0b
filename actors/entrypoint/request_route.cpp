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

constexpr int max_attempts = 5;
/// Pause before placing again when no instance can take the request (restarting, all full).
constexpr auto retry_delay = std::chrono::milliseconds(100);
/// Limit for asking a (possibly remote) supervisor for a rank handle.
constexpr auto handle_timeout = std::chrono::seconds(5);
/// Limit for the SWA directory's answer; without one the prefill simply has no remote snapshot.
constexpr auto swa_lookup_timeout = std::chrono::milliseconds(300);

/// Nothing can take the request now: place it again shortly, within the configured wait.
void wait_for_capacity(request_pointer self, const char* what) {
  auto& st = self->state;
  st.prefill_lease.reset();
  st.decode_lease.reset();
  if (std::chrono::steady_clock::now() - st.arrived > st.ctx->cfg.instance_wait) {
    fail(self, 503, std::string{"no "} + what + " can take the request now; try again later");
    return;
  }
  self->delayed_send(self, retry_delay, restart_atom::value);
}

/// Asks the supervisor `sup` of a live instance for rank `rank`; calls `found` with it, or waits
/// for capacity when the instance has no such rank any more (it restarted smaller).
template <class F>
void find_rank(request_pointer self, const caf::strong_actor_ptr& sup, uint32_t rank, uint64_t job, F found) {
  self->request(caf::actor_cast<instance_supervisor_actor>(sup), handle_timeout, caf::get_atom::value, rank)
    .then(
      [=](caf::strong_actor_ptr& p) mutable {
        if (self->state.done || self->state.job != job)
          return;
        if (!p || self->state.dead.count(caf::actor_cast<caf::actor_addr>(p)) > 0)
          wait_for_capacity(self, "rank");
        else
          found(p);
      },
      [=](caf::error& e) {
        if (self->state.done || self->state.job != job)
          return;
        log().info("request={} instance unreachable: {}", self->state.id, self->system().render(e));
        attempt(self);
      });
}

const live_instance* named(const std::vector<live_instance>& v, const std::string& name) {
  for (auto& i : v)
    if (i.name == name)
      return &i;
  return nullptr;
}

} // namespace

void count_kv_bytes(request_pointer self, const token_batch& b) {
  auto& st = self->state;
  if (b.kv_bytes > 0 && st.transport)
    st.ctx->kv_transfer_bytes->with({to_string(*st.transport)}).inc(static_cast<double>(b.kv_bytes));
}

namespace {

void on_prefilled(request_pointer self, prefill_result& r) {
  auto& st = self->state;
  st.prefill_lease.reset();
  if (st.prefill_rank) {
    self->demonitor(st.prefill_rank);
    st.prefill_rank = nullptr;
  }
  if (r.error) {
    fail(self, 500, "prefill failed: " + error_text(r.error));
    return;
  }
  if (st.ticket)
    st.ticket->prefilled(); // its tokens leave the prefill queue
  st.progress = std::chrono::steady_clock::now();
  if (st.attempts == 1) {
    st.usage.cached_tokens = r.cached;
    st.ctx->cached_tokens->inc(static_cast<double>(r.cached));
  }
  if (r.snapshot_hit)
    st.ctx->snapshot_hits->with({r.snapshot_remote ? "remote" : "local"}).inc();
  if (!r.finished) {
    st.transport = r.transport;
    st.ctx->kv_transfers->with({to_string(r.transport)}).inc();
  }
  st.prefilled = true;
  on_tokens(self, {r.first_token}, r.finished);
  auto early = std::move(st.early);
  for (auto& b : early) {
    count_kv_bytes(self, b);
    if (!st.done)
      on_tokens(self, b.tokens, b.finished);
  }
}

/// Where the routers put one attempt, and what the prefill job carries.
struct placement {
  uint64_t job = 0;
  std::vector<int32_t> tokens;
  caf::strong_actor_ptr decode_supervisor;
  uint32_t decode_rank = 0;
  caf::strong_actor_ptr prefill_supervisor;
  uint32_t prefill_rank = 0;
  /// The SWA directory's answer: the window ending at `snapshot_end` lives at `snapshot_owner`.
  int64_t snapshot_end = 0;
  caf::strong_actor_ptr snapshot_owner;
  /// The decode node's RDMA endpoint (empty: none, or RDMA is avoided for this request).
  std::string decode_rdma;
};

/// Sends the prefill job to the prefill rank `pp`; it hands the KV to the decode rank `dp`.
void send_prefill(request_pointer self, const placement& at, const caf::strong_actor_ptr& dp,
                  const caf::strong_actor_ptr& pp) {
  auto& st = self->state;
  st.prefill_rank = caf::actor_cast<caf::actor>(pp);
  self->monitor(st.prefill_rank);
  prefill_job pj;
  pj.id = at.job;
  pj.tokens = at.tokens;
  pj.sampling = st.sampling;
  pj.sampling.max_tokens = st.sampling.max_tokens - static_cast<int32_t>(st.generated.size());
  pj.decode_rank = dp;
  pj.sink = caf::actor_cast<caf::strong_actor_ptr>(self);
  pj.snapshot_end = at.snapshot_end;
  pj.snapshot_owner = at.snapshot_owner;
  pj.decode_rdma = at.decode_rdma;
  pj.prompt_length = static_cast<int64_t>(st.prompt.size());
  pj.cache_salt = st.salt;
  auto job = at.job;
  self->request(caf::actor_cast<rank_actor>(pp), st.ctx->cfg.prefill_timeout, prefill_atom::value, std::move(pj))
    .then(
      [=](prefill_result& r) {
        if (!self->state.done && self->state.job == job)
          on_prefilled(self, r);
      },
      [=](caf::error& e) {
        // The prefill rank died or timed out: try again (the cache makes it cheap).
        if (self->state.done || self->state.job != job)
          return;
        log().info("request={} prefill lost: {}", self->state.id, self->system().render(e));
        attempt(self);
      });
}

/// Resolves the chosen decode and prefill ranks to handles (monitoring the decode rank), then
/// sends the prefill.
void reach_ranks(request_pointer self, const placement& at) {
  find_rank(self, at.decode_supervisor, at.decode_rank, at.job, [=](caf::strong_actor_ptr& dp) {
    auto& st = self->state;
    st.decode_rank = caf::actor_cast<caf::actor>(dp);
    self->monitor(st.decode_rank);
    find_rank(self, at.prefill_supervisor, at.prefill_rank, at.job,
              [=](caf::strong_actor_ptr& pp) { send_prefill(self, at, dp, pp); });
  });
}

/// Asks the SWA directory (DESIGN §1 step 3) which node holds the window ending at the hit, whose
/// block key CHECK gave; then reaches the ranks. Without an answer in time the prefill rank uses
/// its own memory or replays the window.
void ask_swa_directory(request_pointer self, const membership_view& view, placement at,
                       const kv::prefix_cache::check_result& hit) {
  auto key = hit.key ? std::optional{*hit.key} : std::nullopt;
  auto shard = key ? swa_shard_for(view, *key) : nullptr;
  if (!shard) {
    reach_ranks(self, at);
    return;
  }
  self->request(caf::actor_cast<swa_shard_actor>(shard), swa_lookup_timeout, swa_lookup_atom::value, *key)
    .then(
      [=](caf::strong_actor_ptr& owner) mutable {
        if (self->state.done || self->state.job != at.job)
          return;
        if (owner) {
          at.snapshot_end = hit.length;
          at.snapshot_owner = owner;
        }
        reach_ranks(self, at);
      },
      [=](caf::error&) {
        if (!self->state.done && self->state.job == at.job)
          reach_ranks(self, at);
      });
}

} // namespace

/// Places the current attempt: the decode router picks a decode rank, the prefill router a
/// prefill rank; the prefill rank hands the KV to the decode rank itself.
void place(request_pointer self) {
  auto& st = self->state;
  auto view = st.ctx->cluster->get().view;
  auto prefills = live_instances(view, node_role::prefill);
  auto decodes = live_instances(view, node_role::decode);
  if (prefills.empty() || decodes.empty()) {
    wait_for_capacity(self, prefills.empty() ? "prefill instance" : "decode instance");
    return;
  }
  placement at;
  at.job = st.job;
  at.tokens = st.prompt;
  at.tokens.insert(at.tokens.end(), st.generated.begin(), st.generated.end());
  auto length = static_cast<int64_t>(at.tokens.size());
  const auto prompt_length = static_cast<int64_t>(st.prompt.size());
  auto hit = st.ctx->cache ? st.ctx->cache->check(at.tokens, prompt_length, st.salt) : kv::prefix_cache::check_result{};
  st.decode_lease = decode_load::assign(st.ctx->decode_ranks, decodes, length);
  st.prefill_lease = prefill_load::assign(st.ctx->prefill_ranks, prefills,
                                          st.ctx->quota->cost(static_cast<double>(length - hit.length),
                                                              static_cast<double>(hit.length)));
  if (!st.decode_lease || !st.prefill_lease) {
    wait_for_capacity(self, "decode rank");
    return;
  }
  at.decode_supervisor = named(decodes, st.decode_lease->instance())->supervisor;
  at.decode_rank = st.decode_lease->rank();
  if (!st.rdma_failed)
    at.decode_rdma = named(decodes, st.decode_lease->instance())->rdma;
  at.prefill_supervisor = named(prefills, st.prefill_lease->instance())->supervisor;
  at.prefill_rank = st.prefill_lease->rank();
  ask_swa_directory(self, view, std::move(at), hit);
}

/// One attempt: prefill prompt + tokens generated so far, then decode the rest.
void attempt(request_pointer self) {
  auto& st = self->state;
  if (st.decode_rank) {
    self->demonitor(st.decode_rank);
    self->send(caf::actor_cast<rank_actor>(st.decode_rank), cancel_atom::value, st.job);
    st.decode_rank = nullptr;
  }
  if (st.prefill_rank) {
    // The last attempt's prefill (timed out) would only hold blocks there.
    self->send(caf::actor_cast<rank_actor>(st.prefill_rank), cancel_atom::value, st.job);
    self->demonitor(st.prefill_rank);
    st.prefill_rank = nullptr;
  }
  st.prefill_lease.reset();
  st.decode_lease.reset();
  if (++st.attempts > max_attempts) {
    fail(self, 503, "request failed after " + std::to_string(max_attempts) + " attempts");
    return;
  }
  st.job = st.id * 16 + static_cast<uint64_t>(st.attempts);
  st.prefilled = false;
  st.early.clear();
  st.transport.reset();
  place(self);
}

} // namespace deepinfer::actors
