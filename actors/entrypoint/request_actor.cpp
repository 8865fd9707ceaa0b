#include "actors/errors.hpp"
#include "actors/entrypoint/request_actor.hpp"

#include <algorithm>
#include <chrono>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <fmt/format.h>

#include "actors/control/live_instances.hpp"
#include "actors/http/discarding_writer.hpp"
#include "actors/log.hpp"
#include "kv/prefix_cache.hpp"
#include "actors/entrypoint/prompt_batch_writer.hpp"
#include "actors/entrypoint/request_prepare.hpp"
#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/api_ids.hpp"
#include "recipe/protocol/prompt_batch.hpp"

// The life of one request: prepare (parse, render, tokenize: here, never on an HTTP I/O
// thread), admission, the deadline timer, and the answer in the API's shape. Routing each
// attempt to the ranks is request_route.cpp.

namespace deepinfer::actors {

namespace {

using clock_type = std::chrono::steady_clock;

bool anthropic(const request_state& st) {
  return st.conv.api == recipe::api_kind::messages;
}

/// Sends an error response (only before the SSE head is out). A background turn, answered
/// already, stores it as its end (and a stream of it gets the error event).
void send_error(request_state& st, const recipe::api_error& e, http::response_writer::header_list headers = {}) {
  if (st.background_answered) {
    auto& out = *st.samples.front().out;
    auto events = out.fail(e.type, e.code, e.message, st.usage_now());
    store_response(st, out.body(st.usage_now()));
    if (st.streaming) {
      st.writer->write(std::move(events));
      st.writer->finish();
      return;
    }
  }
  http::http_response r;
  r.status = static_cast<unsigned>(e.status);
  r.body = e.body();
  r.headers = std::move(headers);
  st.writer->send(std::move(r));
}

/// The deadline or the stall timeout passed: the API's error, never a normal-looking end.
void deadline_exceeded(request_pointer self, const std::string& why) {
  auto& st = self->state;
  log().warn("request={} {} after {} tokens", st.id, why, st.generated_tokens());
  end_with_error(self, 504, anthropic(st) ? "timeout_error" : "server_error", "deadline_exceeded",
                 "The request " + why + " after generating " + std::to_string(st.generated_tokens()) +
                   " tokens; retry, or ask for fewer tokens (max_tokens).");
}

/// 429 (OpenAI routes, `rate_limit_error`) or 529 (Messages, `overloaded_error`) with Retry-After.
/// `reason` labels the refusal metric: queue_full | queue_timeout.
void refuse_overloaded(request_pointer self, const char* reason, const std::string& why) {
  auto& st = self->state;
  st.done = true;
  auto& adm = *st.ctx->admission;
  const auto retry = adm.retry_after_seconds();
  st.ctx->admission_refused->with({reason}).inc();
  recipe::api_error e;
  e.api = st.conv.api;
  e.status = anthropic(st) ? 529 : 429;
  e.type = anthropic(st) ? "overloaded_error" : "rate_limit_error";
  e.code = "rate_limit_exceeded";
  e.message = "The server is overloaded: " + why + ". Retry after " + std::to_string(retry) + " s.";
  log().info("request={} refused: {}", st.id, why);
  send_error(st, e, {{"Retry-After", std::to_string(retry)}});
  self->quit();
}

/// Arms the one deadline timer: at the earliest of the stall timeout from the last progress,
/// the total deadline, or (while waiting for admission) the queue timeout.
void arm_deadline(request_pointer self) {
  auto& st = self->state;
  auto& cfg = st.ctx->cfg;
  auto at = st.waiting ? st.arrived + cfg.admission.queue_timeout : st.progress + cfg.requests.stall_timeout;
  if (cfg.requests.deadline.count() > 0)
    at = std::min(at, st.arrived + cfg.requests.deadline);
  const auto wait = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(at - clock_type::now()),
                             std::chrono::milliseconds{1});
  self->delayed_send(self, wait, deadline_atom::value, ++st.timer);
}

/// The stream's first events (one per sample), with the usage known so far.
void write_start_events(request_pointer self) {
  auto& st = self->state;
  st.start_event_pending = false;
  std::string head;
  for (auto& sm : st.samples)
    head += sm.out->start(st.usage);
  st.writer->write(std::move(head));
}

/// Admitted: the stream starts, the deadline counts, the first attempt is placed (one for all
/// samples: the others ride on sample 0's, so they are set up first).
void begin(request_pointer self) {
  auto& st = self->state;
  st.progress = clock_type::now();
  st.timeline.close(request_timeline::stage::admit, st.progress);
  if (st.conv.stream && !st.streaming) { // a background turn's stream is out already
    st.streaming = true;
    st.writer->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    if (st.conv.api == recipe::api_kind::messages)
      st.start_event_pending = true;
    else
      write_start_events(self);
  }
  arm_deadline(self);
  for (std::size_t i = st.samples.size(); i-- > 0;)
    attempt(self, static_cast<int>(i));
}

void on_deadline(request_pointer self, uint64_t timer) {
  auto& st = self->state;
  if (st.done || timer != st.timer)
    return;
  auto& cfg = st.ctx->cfg;
  const auto now = clock_type::now();
  auto secs = [](auto d) { return fmt::format("{:.1f}", std::chrono::duration<double>(d).count()); };
  if (cfg.requests.deadline.count() > 0 && now - st.arrived >= cfg.requests.deadline)
    return st.waiting && st.ctx->admission->withdraw(st.waiting)
             ? refuse_overloaded(self, "queue_timeout", "the request waited " + secs(now - st.arrived) +
                                                          " s for admission, its whole deadline")
             : deadline_exceeded(self, "passed its deadline of " + secs(cfg.requests.deadline) + " s");
  if (st.waiting) {
    if (now - st.arrived >= cfg.admission.queue_timeout && st.ctx->admission->withdraw(st.waiting))
      return refuse_overloaded(self, "queue_timeout", "the request waited " + secs(now - st.arrived) +
                                                        " s for admission (the queue timeout)");
  } else if (now - st.progress >= cfg.requests.stall_timeout) {
    return deadline_exceeded(self, "made no progress for " + secs(now - st.progress) + " s (stall timeout)");
  }
  arm_deadline(self);
}

/// Asks admission control for room: in at once, in line (then `admit` or the queue timeout
/// comes), or refused.
void admit(request_pointer self) {
  auto& st = self->state;
  auto view = st.ctx->cluster->get().view;
  int64_t prefill_ranks = 0, decode_ranks = 0;
  for (auto& i : live_instances(view, node_role::prefill))
    prefill_ranks += i.ranks;
  for (auto& i : live_instances(view, node_role::decode))
    decode_ranks += i.ranks;
  // The uncached tokens are what the prefill ranks will compute (CHECK: metadata only).
  const auto hit = st.ctx->cache ? st.ctx->cache->check(st.prompt, 0, st.salt, st.image_marks).length : 0;
  auto d = admission_control::request(st.ctx->admission, static_cast<int64_t>(st.prompt.size()) - hit, prefill_ranks,
                              decode_ranks, [addr = self->address()] {
                                if (auto h = caf::actor_cast<caf::actor>(addr))
                                  caf::anon_send(h, admit_atom::value);
                              });
  switch (d.what) {
    case admission_control::outcome::admitted:
      st.ticket = std::move(d.ticket);
      return begin(self);
    case admission_control::outcome::queued:
      st.waiting = std::move(d.place);
      return arm_deadline(self);
    case admission_control::outcome::refused:
      return refuse_overloaded(self, "queue_full", std::to_string(st.ctx->admission->limits().max_waiting) +
                                                     " requests are already waiting for admission");
  }
}

/// Images + render + tokenize + limits of a parsed request into the state and `sampling`; false
/// (the error answered) when it cannot run.
bool prepare(request_pointer self, recipe::conversation conv, const fetched_images& fetched,
             engine::sampling_params& sampling) {
  auto& st = self->state;
  auto p = prepare_conversation(*st.ctx, std::move(conv), st.tenant, fetched, st.format_shortest, &st.predecoded);
  st.predecoded.clear();
  if (!p) {
    st.done = true;
    send_error(st, p.error());
    return false;
  }
  st.conv = std::move(p->conv);
  st.prompt = std::move(p->prompt);
  st.salt = p->salt;
  st.images = std::move(p->images);
  for (const auto& im : st.images)
    st.image_marks.push_back(im.mark);
  st.traffic = p->traffic;
  sampling.max_tokens = p->max_tokens;
  sampling.constraint = std::move(p->constraint);
  // The constraint covers the output from the request's own prompt on (a resubmission's
  // tokens hold what it generated before).
  sampling.output_from = static_cast<int64_t>(st.prompt.size());
  return true;
}

caf::behavior start(request_pointer self, recipe::conversation conv, const fetched_images& fetched);

caf::behavior request_behavior(request_pointer self, std::shared_ptr<entrypoint::context> ctx, recipe::api_kind api,
                               std::string body, std::string tenant, std::shared_ptr<http::response_writer> writer,
                               request_arrival arrival) {
  auto& st = self->state;
  st.timeline.begin(arrival.first_byte, arrival.dispatched);
  st.ctx = std::move(ctx);
  st.writer = std::move(writer);
  st.id = st.ctx->next_id++;
  st.ctx->in_flight->inc(1);
  self->attach_functor([ctx = st.ctx] { ctx->in_flight->dec(1); });
  // The writer outlives nothing it must not: the callback holds only a weak address.
  st.writer->on_disconnect([addr = self->address()] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, cancel_atom::value, client_went_away);
  });
  st.conv.api = api;
  st.tenant = tenant;
  // Legacy Completions with a list of prompts: one request per prompt, one merged answer.
  if (api == recipe::api_kind::completions) {
    auto batch = recipe::split_prompt_batch(body, static_cast<std::size_t>(st.ctx->cfg.requests.max_batch_prompts));
    if (batch.error) {
      send_error(st, *batch.error);
      self->quit();
      return {};
    }
    if (!batch.bodies.empty()) {
      log().debug("request={} a batch of {} prompts: one request each", st.id, batch.bodies.size());
      auto merger = prompt_batch_writer::make(std::move(st.writer), static_cast<int>(batch.bodies.size()),
                                              batch.n);
      for (std::size_t i = 0; i < batch.bodies.size(); ++i)
        spawn_request_actor(st.ctx, api, std::move(batch.bodies[i]), tenant, merger->part(static_cast<int>(i)), arrival);
      self->quit();
      return {};
    }
  }
  // A large body (an inline image, in practice) is parsed where it yields the CPU to text
  // requests; a parse takes ~6 ms per MiB (bench_parse_body).
  if (st.ctx->background && body.size() >= st.ctx->cfg.background_body_bytes)
    return parse_in_background(self, api, std::move(body), std::move(tenant));
  auto conv = parse_for_serving(*st.ctx, api, body, tenant);
  std::string().swap(body); // the body (up to the body limit) is not needed any more
  return after_parse(self, std::move(conv));
}

/// The rest of a request once its images are at hand: prepare, the stream parser and encoder,
/// admission, and the behavior that carries it to the end.
caf::behavior start(request_pointer self, recipe::conversation conv, const fetched_images& fetched) {
  auto& st = self->state;
  engine::sampling_params sampling;
  if (!prepare(self, std::move(conv), fetched, sampling)) {
    self->quit();
    return {};
  }
  st.timeline.close(request_timeline::stage::prepare);
  auto& smp = st.conv.sampling;
  sampling_from_request(*st.ctx, st.conv, sampling);
  st.usage.prompt_tokens = static_cast<int64_t>(st.prompt.size());
  st.ctx->prompt_tokens->inc(static_cast<double>(st.prompt.size()));
  recipe::stream_parser::config pc;
  // A continued message picks up where it was left: in its reasoning or in its text.
  const auto cont = recipe::continuation_of(st.conv);
  pc.thinking = cont == recipe::continuation::none ? st.conv.thinking : cont == recipe::continuation::reasoning;
  // So does a legacy completion, which continues its raw prompt: newlines it starts with are text.
  pc.continues = cont != recipe::continuation::none || st.conv.api == recipe::api_kind::completions;
  pc.stop = st.conv.sampling.stop;
  pc.ignore_eos = smp.ignore_eos;
  pc.stop_ids = smp.stop_token_ids;
  pc.include_stop = smp.include_stop_str_in_output;
  pc.show_specials = !smp.skip_special_tokens;
  auto tok = st.ctx->tok;
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch()).count();
  // OpenAI's `n`: choice k samples with the request's seed + k (as vLLM), so choice k equals a
  // request of that seed alone.
  const auto choices = static_cast<int>(std::clamp<int64_t>(smp.n, 1, 16));
  auto ids = recipe::api_ids::draw(st.conv.api, choices);
  st.public_id = ids.response;
  st.samples.resize(static_cast<std::size_t>(choices));
  for (int k = 0; k < choices; ++k) {
    auto& sm = st.samples[static_cast<std::size_t>(k)];
    sm.index = k;
    sm.sampling = sampling;
    sm.sampling.seed = sampling.seed + static_cast<uint64_t>(k);
    pc.tool_id_prefix = ids.tool_prefixes[static_cast<std::size_t>(k)];
    sm.parser = std::make_unique<recipe::stream_parser>(
      pc, *st.ctx->specials, [tok](recipe::token_id id) { return tok->token_bytes(id); },
      [tok, hidden = recipe::special_added_tokens(*tok)](recipe::token_id id) { return hidden(id); });
    sm.out = std::make_unique<recipe::api_output>(st.conv, ids.response, now, k, choices);
  }
  log().debug("request={} id={} choices={}", st.id, ids.response, choices);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.done)
      return;
    st.dead[dm.source] = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
    for (auto& sm : st.samples) {
      if (st.done)
        return;
      if (sm.done)
        continue;
      if (sm.prefill_rank && dm.source == sm.prefill_rank.address()) {
        log().warn("request={} prefill rank down: {}; resubmitting", st.id, self->system().render(dm.reason));
        prefill_lost(self, sm.index);
      } else if (sm.moving_from && dm.source == sm.moving_from.address()) {
        // The draining rank went before it said whether the KV left: start over (a new rank
        // that gets it after all drops it, the attempt cancelled).
        log().warn("request={} draining decode rank down mid-handoff: {}; resubmitting sample {}", st.id,
                   self->system().render(dm.reason), sm.index);
        sm.moving_from = nullptr;
        attempt(self, sm.index);
      } else if (sm.decode_rank && dm.source == sm.decode_rank.address()) {
        log().warn("request={} decode rank down: {}; resubmitting sample {}", st.id,
                   self->system().render(dm.reason), sm.index);
        sm.decode_rank = nullptr;
        attempt(self, sm.index);
      }
    }
  });
  // Before admission: a background turn is answered at once; a refusal then ends it `failed`.
  if (st.conv.background && st.ctx->responses)
    answer_background(self);
  admit(self);
  return {
    [=](tokens_atom, token_batch& b) {
      auto& st = self->state;
      if (st.done)
        return;
      auto* sm = st.sample_of_job(b.id);
      if (sm == nullptr || sm->done) {
        // A sequence of an abandoned attempt (or of a sample already answered) still decoding
        // somewhere: stop it.
        if (auto sender = caf::actor_cast<rank_actor>(self->current_sender()); sender && !b.finished)
          self->send(sender, cancel_atom::value, b.id);
        return;
      }
      const int i = sm->index;
      sm->drafted += b.drafted;
      sm->accepted += b.accepted;
      if (b.error) {
        if (!is_retryable(b.error)) {
          fail(self, 500, "decode failed: " + self->system().render(b.error));
          return;
        }
        log().warn("request={} decode rank: {}; resubmitting sample {}", st.id, self->system().render(b.error), i);
        // The error can overtake the prefill's answer, which names the transport: the code says it.
        sm->rdma_failed = sm->rdma_failed || is(b.error, errc::kv_rdma_failed) || sm->transport == kv_transport_kind::rdma;
        attempt(self, i);
        return;
      }
      // The first tokens of the rank a handoff moved the sample to (the old rank sends none
      // after its offer).
      on_handoff_done(self, i);
      sm->decoding = true;
      if (!sm->prefilled) {
        sm->early.push_back(std::move(b));
        return;
      }
      count_kv_bytes(self, i, b);
      on_tokens(self, i, b.tokens, b.finished, b.logprobs);
    },
    [=](cancel_atom, uint64_t why) {
      auto& st = self->state;
      if (st.done)
        return;
      if (st.background_answered) {
        if (why == client_cancelled)
          return cancel_background(self);
        // A background turn's stream lost its listener: the turn runs on and is stored.
        log().info("request={} id={} stream client went away; the background turn runs on", st.id, st.public_id);
        st.writer = std::make_shared<recording_writer>(std::make_shared<http::discarding_writer>(), st.background_log);
        return;
      }
      log().info("request={} client went away; cancelling", st.id);
      stop_in_flight(self);
      self->quit();
    },
    [=](admit_atom) {
      auto& st = self->state;
      if (st.done || !st.waiting || !st.waiting->ticket)
        return;
      st.ticket = std::move(st.waiting->ticket);
      st.waiting.reset();
      begin(self);
    },
    [=](deadline_atom, uint64_t timer) { on_deadline(self, timer); },
    [=](decode_atom, uint64_t job) { check_decode_started(self, job); },
    [=](move_atom, uint64_t job) { on_move_offer(self, job); },
    [=](move_atom, uint64_t job, const caf::error& err) { on_moved(self, job, err); },
    [=](restart_atom, int i) {
      auto& st = self->state;
      if (!st.done && i >= 0 && i < static_cast<int>(st.samples.size()) && !st.samples[static_cast<std::size_t>(i)].done)
        place(self, i);
    },
  };
}

} // namespace

void on_tokens(request_pointer self, int i, const std::vector<int32_t>& ids, bool finished, const token_logprobs& lp) {
  auto& st = self->state;
  auto& sm = st.samples[static_cast<std::size_t>(i)];
  auto now = clock_type::now();
  auto& ctx = *st.ctx;
  if (st.start_event_pending)
    write_start_events(self);
  if (!ids.empty()) {
    if (!st.first_token_out) {
      st.first_token_out = true;
      const double ttft = std::chrono::duration<double>(now - st.arrived).count();
      ctx.ttft->observe(ttft);
      ctx.vllm.ttft->observe(ttft);
    } else if (!sm.generated.empty()) {
      const double itl = std::chrono::duration<double>(now - sm.last_token).count() / static_cast<double>(ids.size());
      ctx.itl->observe(itl);
      ctx.vllm.itl->observe(itl);
    }
    sm.last_token = now;
    st.progress = now;
    ctx.generated_tokens->inc(static_cast<double>(ids.size()));
  }
  sm.generated.insert(sm.generated.end(), ids.begin(), ids.end());
  report_growth(self, sm.rides ? 0 : i);
  auto emit = [&](std::span<const recipe::stream_event> events) {
    for (const auto& e : events)
      if (e.type == recipe::stream_event::kind::finish)
        sm.finish = e.reason;
    if (st.streaming)
      st.writer->write(sm.out->encode(events, st.usage_now()));
    else
      sm.out->apply(events);
  };
  const bool with_logprobs = sm.sampling.logprobs && lp.logprob.size() == ids.size();
  if (with_logprobs) {
    // Each token's entry goes on the text it became: one token at a time, so an entry meets its
    // own token's events. Chat lists every generated token (usage counts them all); Responses
    // and legacy Completions only output text, which template tokens (end of reasoning,
    // tool-call markup) are not.
    const bool every_token = st.conv.api == recipe::api_kind::chat;
    auto entries = logprob_entries(*st.ctx->tok, ids, lp, st.conv.sampling.return_tokens_as_token_ids);
    for (std::size_t k = 0; k < ids.size() && !sm.parser->finished(); ++k) {
      if (every_token || st.ctx->tok->find_added(ids[k]) == nullptr)
        sm.out->logprobs(std::span(&entries[k], 1), st.streaming);
      emit(sm.parser->feed(std::span(&ids[k], 1)));
    }
  } else {
    emit(sm.parser->feed(ids));
  }
  if (!sm.parser->finished() && finished)
    emit(sm.parser->finish(static_cast<int32_t>(sm.generated.size()) >= sm.sampling.max_tokens
                             ? recipe::finish_reason::length
                             : recipe::finish_reason::stop));
  if (!sm.parser->finished())
    return;
  sm.done = true;
  // A stop string ended the answer (the parser matches them): the decode rank need not go on.
  if (!finished && sm.decode_rank)
    self->send(caf::actor_cast<rank_actor>(sm.decode_rank), cancel_atom::value, sm.job);
  if (std::all_of(st.samples.begin(), st.samples.end(), [](const sample_state& s) { return s.done; }))
    finish_ok(self);
}

caf::behavior start_request(request_pointer self, recipe::conversation conv, const fetched_images& fetched) {
  return start(self, std::move(conv), fetched);
}

void refuse_request(request_pointer self, const recipe::api_error& e) {
  auto& st = self->state;
  st.done = true;
  send_error(st, e);
  self->quit();
}

void fail(request_pointer self, int status, const std::string& message) {
  auto& st = self->state;
  if (!st.done)
    log().warn("request={} failed status={} {}", st.id, status, message);
  // A 4xx is the request's own (both APIs call it invalid_request_error); the rest are ours.
  const auto type = status >= 400 && status < 500 ? "invalid_request_error"
                    : anthropic(st)               ? "api_error"
                                                  : "server_error";
  end_with_error(self, status, type, "", message);
}

void spawn_request_actor(std::shared_ptr<entrypoint::context> ctx, recipe::api_kind api, std::string body,
                         std::string tenant, std::shared_ptr<http::response_writer> writer, request_arrival arrival) {
  auto& sys = *ctx->sys;
  sys.spawn(request_behavior, std::move(ctx), api, std::move(body), std::move(tenant), std::move(writer), arrival);
}

} // namespace deepinfer::actors
