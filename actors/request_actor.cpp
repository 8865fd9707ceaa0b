#include "actors/request_actor.hpp"

#include <chrono>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/api_output.hpp"
#include "actors/log.hpp"
#include "actors/serving_context.hpp"
#include "actors/stop_filter.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/stream/stream_parser.hpp"

namespace deepinfer::actors {

namespace {

constexpr int max_attempts = 5;
/// Pause before trying again when an instance has no rank (it is restarting).
constexpr auto retry_delay = std::chrono::milliseconds(100);
constexpr auto handle_timeout = std::chrono::seconds(5);

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
  /// This request counted on the decode rank the router chose; released when it ends.
  std::unique_ptr<decode_load::lease> decode_lease;
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

/// Asks `sup` for rank `preferred`, else rank 0 (the instance may have restarted smaller);
/// calls `found` with the rank, or retries the whole attempt shortly when the instance has none.
template <class F>
void find_rank(request_pointer self, instance_supervisor_actor sup, uint32_t preferred, F found) {
  self->request(sup, handle_timeout, caf::get_atom::value, preferred)
    .then(
      [=](caf::strong_actor_ptr& p) mutable {
        if (p) {
          found(p);
          return;
        }
        if (preferred != 0) {
          find_rank(self, sup, 0, found);
          return;
        }
        log().info("request={} instance has no rank now; retrying", self->state.id);
        self->delayed_send(self, retry_delay, restart_atom::value);
      },
      [=](caf::error& e) { fail(self, 503, "instance unreachable: " + self->system().render(e)); });
}

void start_decode(request_pointer self, prefilled_sequence ps, sampling_spec s) {
  auto& st = self->state;
  // The decode router (DESIGN §6.2) balances request count and KV length over the ranks.
  auto kv_tokens = static_cast<int64_t>(st.prompt.size() + st.generated.size());
  st.decode_lease = decode_load::assign(st.ctx->decode_ranks, kv_tokens);
  auto preferred = st.decode_lease ? st.decode_lease->rank() : 0u;
  find_rank(self, st.ctx->decode, preferred, [=](caf::strong_actor_ptr& p) mutable {
    auto& st = self->state;
    st.decode_rank = caf::actor_cast<caf::actor>(p);
    self->monitor(st.decode_rank);
    self->send(caf::actor_cast<rank_actor>(p), decode_atom::value, std::move(ps), s,
               caf::actor_cast<caf::strong_actor_ptr>(self));
  });
}

/// One attempt: prefill prompt + tokens generated so far, then decode the rest.
void attempt(request_pointer self) {
  auto& st = self->state;
  if (++st.attempts > max_attempts) {
    fail(self, 503, "request failed after " + std::to_string(max_attempts) + " attempts");
    return;
  }
  prefill_job job;
  job.id = st.id * 16 + static_cast<uint64_t>(st.attempts);
  st.job = job.id;
  job.tokens = st.prompt;
  job.tokens.insert(job.tokens.end(), st.generated.begin(), st.generated.end());
  job.sampling = st.sampling;
  job.sampling.max_tokens = st.sampling.max_tokens - static_cast<int32_t>(st.generated.size());
  auto rest = job.sampling;
  find_rank(self, st.ctx->prefill, static_cast<uint32_t>(st.id % 2), [=](caf::strong_actor_ptr& p) mutable {
        auto& st = self->state;
        self->request(caf::actor_cast<rank_actor>(p), st.ctx->cfg.prefill_timeout, prefill_atom::value, job)
          .then(
            [=](prefilled_sequence& ps) {
              if (!ps.error.empty()) {
                fail(self, 500, "prefill failed: " + ps.error);
                return;
              }
              if (self->state.attempts == 1) {
                self->state.usage.cached_tokens = ps.cached;
                self->state.ctx->cached_tokens->inc(static_cast<double>(ps.cached));
              }
              auto first = ps.first_token;
              bool finished = ps.finished;
              on_tokens(self, {first}, finished);
              if (!self->state.done)
                start_decode(self, std::move(ps), rest);
            },
            [=](caf::error&) { attempt(self); });  // rank died or timed out: try again
  });
}

caf::behavior request_behavior(request_pointer self, std::shared_ptr<entrypoint::context> ctx,
                               recipe::conversation conv, std::vector<int32_t> prompt,
                               std::shared_ptr<http::response_writer> writer) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.writer = std::move(writer);
  st.conv = std::move(conv);
  st.prompt = std::move(prompt);
  st.id = st.ctx->next_id++;
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
    if (st.done || !st.decode_rank || dm.source != st.decode_rank.address())
      return;
    log().warn("request={} decode rank down: {}; resubmitting", st.id, self->system().render(dm.reason));
    st.decode_rank = nullptr;
    st.decode_lease.reset();
    attempt(self);
  });
  self->delayed_send(self, st.ctx->cfg.request_timeout, fail_atom::value, std::string{"timeout"});
  attempt(self);
  return {
    [=](tokens_atom, token_batch& b) {
      auto& st = self->state;
      if (st.done || b.id != st.job)
        return;
      if (!b.error.empty()) {
        st.decode_rank = nullptr;
        fail(self, 500, b.error);
        return;
      }
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
        attempt(self);
    },
  };
}

} // namespace

void spawn_request_actor(std::shared_ptr<entrypoint::context> ctx, recipe::conversation conv,
                         std::vector<int32_t> prompt, std::shared_ptr<http::response_writer> writer) {
  auto& sys = *ctx->sys;
  sys.spawn(request_behavior, std::move(ctx), std::move(conv), std::move(prompt), std::move(writer));
}

} // namespace deepinfer::actors
