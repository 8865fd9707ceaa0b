#include "actors/request_actor.hpp"

#include <chrono>
#include <set>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/api_output.hpp"
#include "actors/live_instances.hpp"
#include "actors/log.hpp"
#include "actors/prefix_cache.hpp"
#include "actors/swa_shard.hpp"
#include "actors/serving_context.hpp"
#include "actors/stop_filter.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/stream/stream_parser.hpp"

namespace deepinfer::actors {

namespace {

constexpr int max_attempts = 5;
/// Pause before placing again when no instance can take the request (restarting, all full).
constexpr auto retry_delay = std::chrono::milliseconds(100);
/// Limit for asking a (possibly remote) supervisor for a rank handle.
constexpr auto handle_timeout = std::chrono::seconds(5);
/// Limit for the SWA directory's answer; without one the prefill simply has no remote snapshot.
constexpr auto swa_lookup_timeout = std::chrono::milliseconds(300);

struct request_state {
  std::shared_ptr<entrypoint::context> ctx;
  std::shared_ptr<http::response_writer> writer;
  recipe::conversation conv;
  std::vector<int32_t> prompt;
  std::vector<int32_t> generated;
  sampling_spec sampling;
  std::unique_ptr<recipe::stream_parser> parser;
  std::unique_ptr<stop_filter> stops;
  std::unique_ptr<api_output> out;
  recipe::usage_counts usage;
  uint64_t id = 0;
  /// Id of the current attempt's job: token batches of an earlier attempt are ignored.
  uint64_t job = 0;
  int attempts = 0;
  caf::actor decode_rank;
  /// The prefill rank working on the current attempt (monitored: a request to a dead remote
  /// actor never fails by itself in CAF 0.17); null once it answered.
  caf::actor prefill_rank;
  /// This request counted on the prefill and decode ranks the routers chose; released when the
  /// prefill answers / the request ends.
  std::unique_ptr<prefill_load::lease> prefill_lease;
  std::unique_ptr<decode_load::lease> decode_lease;
  /// The current attempt's prefill answered (its first token is out): token batches of the
  /// decode rank that overtook that answer wait in `early` until then.
  bool prefilled = false;
  std::vector<token_batch> early;
  /// The KV transport of the current attempt (for the bytes the decode rank reports).
  std::string transport;
  /// Ranks this request saw die: their supervisor may still hand them out for a moment (it
  /// learns of the death by its own monitor), and a resubmission must not pick them again.
  std::set<caf::actor_addr> dead;
  /// A decode rank could not receive this request's KV over RDMA: later attempts avoid RDMA.
  bool rdma_failed = false;
  bool done = false;
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_token;
  static inline const char* name = "deepinfer.request";
};

using request_pointer = caf::stateful_actor<request_state>*;

void finish_ok(request_pointer self) {
  auto& st = self->state;
  st.done = true;
  if (st.conv.stream)
    st.writer->finish();
  else
    st.writer->send_json(200, st.out->body(st.usage));
  self->quit();
}

void fail(request_pointer self, int status, const std::string& message) {
  auto& st = self->state;
  if (st.done)
    return;
  st.done = true;
  log().warn("request={} failed status={} {}", st.id, status, message);
  if (st.decode_rank)
    self->send(caf::actor_cast<rank_actor>(st.decode_rank), cancel_atom::value, st.job);
  if (st.prefill_rank)  // still queued or prefilling there: free its blocks
    self->send(caf::actor_cast<rank_actor>(st.prefill_rank), cancel_atom::value, st.job);
  if (st.conv.stream)
    st.writer->finish();  // headers are out; the client sees the stream end early
  else {
    recipe::api_error e;
    e.api = st.conv.api;
    e.status = status;
    e.type = st.conv.api == recipe::api_kind::messages ? "api_error" : "server_error";
    e.message = message;
    st.writer->send_json(static_cast<unsigned>(status), e.body());
  }
  self->quit();
}

/// Feeds new tokens through the stream parser and out to the client.
void on_tokens(request_pointer self, const std::vector<int32_t>& ids, bool finished) {
  auto& st = self->state;
  auto now = std::chrono::steady_clock::now();
  auto& ctx = *st.ctx;
  if (!ids.empty()) {
    if (st.generated.empty())
      ctx.ttft->observe(std::chrono::duration<double>(now - st.arrived).count());
    else
      ctx.itl->observe(std::chrono::duration<double>(now - st.last_token).count() / static_cast<double>(ids.size()));
    st.last_token = now;
    ctx.generated_tokens->inc(static_cast<double>(ids.size()));
  }
  st.generated.insert(st.generated.end(), ids.begin(), ids.end());
  auto emit = [&](std::span<const recipe::stream_event> parsed) {
    auto events = st.stops->apply(parsed);
    auto c = st.parser->counts();
    st.usage.completion_tokens = static_cast<int64_t>(st.generated.size());
    st.usage.reasoning_tokens = c.reasoning_tokens;
    if (st.conv.stream)
      st.writer->write(st.out->encode(events, st.usage));
    else
      st.out->apply(events);
  };
  emit(st.parser->feed(ids));
  if (st.stops->stopped()) {
    // A stop string ended the answer: the decode rank need not go on.
    if (st.decode_rank)
      self->send(caf::actor_cast<rank_actor>(st.decode_rank), cancel_atom::value, st.job);
    finish_ok(self);
    return;
  }
  if (finished && !st.parser->finished())
    emit(st.parser->finish(static_cast<int32_t>(st.generated.size()) >= st.sampling.max_tokens
                             ? recipe::finish_reason::length
                             : recipe::finish_reason::stop));
  if (st.parser->finished())
    finish_ok(self);
}

void attempt(request_pointer self);
void place(request_pointer self);

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

void count_kv_bytes(request_pointer self, const token_batch& b) {
  auto& st = self->state;
  if (b.kv_bytes > 0 && !st.transport.empty())
    st.ctx->kv_transfer_bytes->with({st.transport}).inc(static_cast<double>(b.kv_bytes));
}

void on_prefilled(request_pointer self, prefill_result& r) {
  auto& st = self->state;
  st.prefill_lease.reset();
  if (st.prefill_rank) {
    self->demonitor(st.prefill_rank);
    st.prefill_rank = nullptr;
  }
  if (!r.error.empty()) {
    fail(self, 500, "prefill failed: " + r.error);
    return;
  }
  if (st.attempts == 1) {
    st.usage.cached_tokens = r.cached;
    st.ctx->cached_tokens->inc(static_cast<double>(r.cached));
  }
  if (r.snapshot_hit)
    st.ctx->snapshot_hits->with({r.snapshot_remote ? "remote" : "local"}).inc();
  if (!r.transport.empty()) {
    st.transport = r.transport;
    st.ctx->kv_transfers->with({r.transport}).inc();
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
                       const prefix_cache::check_result& hit) {
  auto key = hit.key ? std::optional{wire_key{hit.key->first, hit.key->second}} : std::nullopt;
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

/// Places the current attempt: the decode router picks a decode rank, the prefill router a
/// prefill rank; the prefill rank hands the KV to the decode rank itself.
void place(request_pointer self) {
  auto& st = self->state;
  auto view = st.ctx->cluster->get().view;
  auto prefills = live_instances(view, "prefill");
  auto decodes = live_instances(view, "decode");
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
  auto hit = st.ctx->cache ? st.ctx->cache->check(at.tokens, prompt_length) : prefix_cache::check_result{};
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
  st.transport.clear();
  place(self);
}

/// Render + tokenize + length check; false (the error answered) when the request cannot run.
bool prepare(request_pointer self) {
  auto& st = self->state;
  auto& ctx = *st.ctx;
  auto api = st.conv.api;
  auto error = [&](int status, std::string message, std::string param) {
    recipe::api_error e;
    e.api = api;
    e.status = status;
    e.type = "invalid_request_error";
    e.message = std::move(message);
    e.param = std::move(param);
    st.done = true;
    st.writer->send_json(static_cast<unsigned>(status), e.body());
    return false;
  };
  auto segments = recipe::render(st.conv, *ctx.specials);
  if (!segments) {
    st.done = true;
    st.writer->send_json(static_cast<unsigned>(segments.error().status), segments.error().body());
    return false;
  }
  st.prompt = ctx.tok->encode(*segments);
  auto max_tokens = st.conv.sampling.max_tokens.value_or(ctx.cfg.default_max_tokens);
  auto total = static_cast<int64_t>(st.prompt.size()) + max_tokens;
  if (total > ctx.cfg.context_limit)
    return error(400, "This model's maximum context length is " + std::to_string(ctx.cfg.context_limit)
                        + " tokens. However, you requested " + std::to_string(total) + " tokens ("
                        + std::to_string(st.prompt.size()) + " in the messages, "
                        + std::to_string(max_tokens) + " in the completion).",
                 "messages");
  return true;
}

caf::behavior request_behavior(request_pointer self, std::shared_ptr<entrypoint::context> ctx,
                               recipe::conversation conv, std::shared_ptr<http::response_writer> writer) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.writer = std::move(writer);
  st.conv = std::move(conv);
  st.id = st.ctx->next_id++;
  if (!prepare(self)) {
    self->quit();
    return {};
  }
  auto& smp = st.conv.sampling;
  st.sampling.temperature = static_cast<float>(smp.temperature.value_or(0.0));
  st.sampling.top_p = static_cast<float>(smp.top_p.value_or(1.0));
  st.sampling.top_k = static_cast<int32_t>(smp.top_k.value_or(0));
  st.sampling.seed = static_cast<uint64_t>(smp.seed.value_or(0));
  st.sampling.max_tokens = static_cast<int32_t>(smp.max_tokens.value_or(st.ctx->cfg.default_max_tokens));
  st.sampling.stop_ids = {st.ctx->eos};
  st.usage.prompt_tokens = static_cast<int64_t>(st.prompt.size());
  st.ctx->prompt_tokens->inc(static_cast<double>(st.prompt.size()));
  st.ctx->in_flight->inc(1);
  self->attach_functor([ctx = st.ctx] { ctx->in_flight->dec(1); });
  st.stops = std::make_unique<stop_filter>(st.conv.sampling.stop);
  recipe::stream_parser::config pc;
  pc.thinking = st.conv.thinking;
  pc.tool_id_prefix = "call_" + std::to_string(st.id) + "_";
  auto tok = st.ctx->tok;
  st.parser = std::make_unique<recipe::stream_parser>(
    pc, *st.ctx->specials, [tok](recipe::token_id id) { return tok->token_bytes(id); });
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch()).count();
  st.out = std::make_unique<api_output>(st.conv, std::to_string(st.id), now);
  if (st.conv.stream) {
    st.writer->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    st.writer->write(st.out->start(st.usage));
  }
  // The writer outlives nothing it must not: the callback holds only a weak address.
  st.writer->on_disconnect([addr = self->address()] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, cancel_atom::value, uint64_t{0});
  });
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.done)
      return;
    st.dead.insert(dm.source);
    if (st.prefill_rank && dm.source == st.prefill_rank.address()) {
      log().warn("request={} prefill rank down: {}; resubmitting", st.id, self->system().render(dm.reason));
      st.prefill_rank = nullptr;
      attempt(self);
      return;
    }
    if (!st.decode_rank || dm.source != st.decode_rank.address())
      return;
    log().warn("request={} decode rank down: {}; resubmitting", st.id, self->system().render(dm.reason));
    st.decode_rank = nullptr;
    attempt(self);
  });
  self->delayed_send(self, st.ctx->cfg.request_timeout, fail_atom::value, std::string{"timeout"});
  attempt(self);
  return {
    [=](tokens_atom, token_batch& b) {
      auto& st = self->state;
      if (st.done)
        return;
      if (b.id != st.job) {
        // A sequence of an abandoned attempt still decoding somewhere: stop it.
        if (auto sender = caf::actor_cast<rank_actor>(self->current_sender()); sender && !b.finished)
          self->send(sender, cancel_atom::value, b.id);
        return;
      }
      if (!b.error.empty()) {
        log().warn("request={} decode rank: {}; resubmitting", st.id, b.error);
        // (The error can overtake the prefill's answer, which names the transport.)
        st.rdma_failed = st.rdma_failed || st.transport == "rdma" || b.error.find("RDMA") != std::string::npos;
        attempt(self);
        return;
      }
      if (!st.prefilled) {
        st.early.push_back(std::move(b));
        return;
      }
      count_kv_bytes(self, b);
      on_tokens(self, b.tokens, b.finished);
    },
    [=](cancel_atom, uint64_t) {
      auto& st = self->state;
      if (st.done)
        return;
      st.done = true;
      log().info("request={} client went away; cancelling", st.id);
      if (st.decode_rank)
        self->send(caf::actor_cast<rank_actor>(st.decode_rank), cancel_atom::value, st.job);
      self->quit();
    },
    [=](fail_atom, const std::string& why) { fail(self, 504, "request " + why); },
    [=](restart_atom) {
      if (!self->state.done)
        place(self);
    },
  };
}

} // namespace

void spawn_request_actor(std::shared_ptr<entrypoint::context> ctx, recipe::conversation conv,
                         std::shared_ptr<http::response_writer> writer) {
  auto& sys = *ctx->sys;
  sys.spawn(request_behavior, std::move(ctx), std::move(conv), std::move(writer));
}

} // namespace deepinfer::actors
