// How a request ends: every choice complete (the stream's end or the body, a stored Responses
// turn), or an error in the API's shape that carries what was generated.
#include <chrono>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/response_store.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "actors/log.hpp"
#include "actors/http/discarding_writer.hpp"
#include "actors/http/metrics_registry.hpp"
#include "recipe/protocol/api_error.hpp"

namespace deepinfer::actors {

/// Stops whatever runs on the ranks for this request (every sample's current attempt).
void cancel_ranks(request_pointer self) {
  for (auto& sm : self->state.samples) {
    if (sm.decode_rank)
      self->send(caf::actor_cast<rank_actor>(sm.decode_rank), cancel_atom::value, sm.job);
    if (sm.prefill_rank) // still queued or prefilling there: free its blocks
      self->send(caf::actor_cast<rank_actor>(sm.prefill_rank), cancel_atom::value, sm.job);
  }
}

void store_response(request_state& st, const std::string& body) {
  if (st.conv.api != recipe::api_kind::responses || !st.conv.store || !st.ctx->responses)
    return;
  response_store::entry e;
  e.body = body;
  e.background = st.conv.background;
  e.events = st.background_log;
  e.history.assign(st.conv.messages.begin() + (st.conv.instructions ? 1 : 0), st.conv.messages.end());
  const auto& r = st.samples.front().out->result();
  recipe::message m;
  m.role = recipe::role::assistant;
  if (!r.content.empty())
    m.content.push_back(recipe::content_part::text(r.content));
  if (!r.reasoning.empty())
    m.reasoning = r.reasoning;
  for (const auto& c : r.calls)
    m.tool_calls.push_back({c.id, c.name, c.arguments});
  e.history.push_back(std::move(m));
  if (st.background_answered)
    st.ctx->responses->replace(st.tenant, st.public_id, std::move(e));
  else
    st.ctx->responses->put(st.tenant, st.public_id, std::move(e));
}

void answer_background(request_pointer self) {
  auto& st = self->state;
  auto& out = *st.samples.front().out;
  st.background_log = std::make_shared<background_events>();
  response_store::entry e;
  e.body = out.queued_body();
  e.background = true;
  e.events = st.background_log;
  e.cancel = [addr = self->address()] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, cancel_atom::value, client_cancelled);
  };
  auto body = e.body;
  st.ctx->responses->put(st.tenant, st.public_id, std::move(e));
  st.background_answered = true;
  log().debug("request={} id={} runs in the background", st.id, st.public_id);
  // Its events are recorded whether the create call streams or not (a GET may stream them).
  std::shared_ptr<http::response_writer> inner;
  if (st.conv.stream) {
    st.writer->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    inner = std::move(st.writer);
  } else {
    st.writer->send_json(200, std::move(body));
    inner = std::make_shared<http::discarding_writer>();
  }
  st.writer = std::make_shared<recording_writer>(std::move(inner), st.background_log);
  st.streaming = true;
  st.writer->write(out.start(st.usage));
}

void stop_in_flight(request_pointer self) {
  auto& st = self->state;
  st.done = true;
  st.ctx->vllm.finished("abort");
  if (st.waiting)
    st.ctx->admission->withdraw(st.waiting);
  cancel_ranks(self);
}

void cancel_background(request_pointer self) {
  auto& st = self->state;
  log().info("request={} id={} cancelled by its client after {} tokens", st.id, st.public_id, st.generated_tokens());
  stop_in_flight(self);
  auto& out = *st.samples.front().out;
  auto closing = out.cancel();
  store_response(st, out.body(st.usage_now()));
  if (st.streaming) {
    st.writer->write(std::move(closing));
    st.writer->finish();
  }
  self->quit();
}

/// Every sample's answer is complete: the stream's end, or the body with every choice.
void finish_ok(request_pointer self) {
  auto& st = self->state;
  st.done = true;
  const auto now = std::chrono::steady_clock::now();
  st.ctx->vllm.e2e->observe(std::chrono::duration<double>(now - st.arrived).count());
  st.timeline.close(request_timeline::stage::decode, now);
  const auto stages = st.timeline.entries(now);
  if (st.ctx->request_stages)
    for (const auto& e : stages)
      st.ctx->request_stages->with({std::string{e.name}}).observe(e.seconds);
  const auto& first = st.samples.front();
  st.ctx->vllm.finished(first.finish == recipe::finish_reason::length ? "length" : "stop");
  const auto usage = st.usage_now();
  // The body also when streamed: a streamed Responses turn is stored too.
  auto body = first.out->body(usage);
  if (st.samples.size() > 1 && !st.conv.stream) {
    std::vector<std::string> others;
    for (std::size_t k = 1; k < st.samples.size(); ++k)
      others.push_back(st.samples[k].out->body(usage));
    body = recipe::api_output::with_choices(body, others);
  }
  store_response(st, body);
  if (st.streaming) {
    if (st.samples.size() > 1) // no choice's finish ended the stream
      st.writer->write(first.out->end(usage));
    st.writer->finish();
  } else {
    http::http_response r;
    r.body = std::move(body);
    if (st.ctx->cfg.requests.server_timing)
      r.headers.emplace_back("Server-Timing", request_timeline::server_timing(stages));
    st.writer->send(std::move(r));
  }
  self->quit();
}

/// Ends the request with an error of `status`, `type` (the API's error type) and `code`: a
/// started stream gets the API's error event and its end; otherwise an error body that carries
/// what was generated so far (`partial`) when there is any.
void end_with_error(request_pointer self, int status, std::string type, std::string code, const std::string& message) {
  auto& st = self->state;
  if (st.done)
    return;
  st.done = true;
  st.ctx->vllm.finished("abort");
  cancel_ranks(self);
  auto& out = *st.samples.front().out;
  if (st.streaming) {
    st.writer->write(out.fail(type, code, message, st.usage_now()));
    st.writer->finish();
  } else {
    recipe::api_error e;
    e.api = st.conv.api;
    e.status = status;
    e.type = std::move(type);
    e.code = std::move(code);
    e.message = message;
    http::http_response r;
    r.status = static_cast<unsigned>(status);
    r.body = !st.samples.front().generated.empty() ? out.failed_body(e, st.usage_now()) : e.body();
    st.writer->send(std::move(r));
  }
  if (st.background_answered)
    store_response(st, out.body(st.usage_now()));
  self->quit();
}

void abandon_request(request_pointer self, const char* while_what) {
  auto& st = self->state;
  st.done = true;
  st.ctx->vllm.finished("abort");
  log().info("request={} client went away while {}", st.id, while_what);
  self->quit();
}

} // namespace deepinfer::actors
