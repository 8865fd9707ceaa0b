// The prefill's answer to the request actor: the first token out, the decode rank's tokens that
// overtook it, what its rank reported (the hit, the transport, its times), and the watchdog of the
// decode start that must follow.

#include <algorithm>
#include <chrono>

#include <caf/event_based_actor.hpp>

#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "actors/errors.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

void count_kv_bytes(request_pointer self, int i, const token_batch& b) {
  auto& sm = sample(self, i);
  if (b.kv_bytes > 0 && sm.transport)
    self->state.ctx->kv_transfer_bytes->with({to_string(*sm.transport)}).inc(static_cast<double>(b.kv_bytes));
}

namespace {

/// How long a prefilled attempt may wait for its decode rank's first tokens: a quarter of the
/// stall timeout, at least 5 s (one decode step takes well under a second even at full batch;
/// a false alarm only costs a resubmission, whose output is the same).
std::chrono::milliseconds decode_start_timeout(request_pointer self) {
  return std::max(std::chrono::milliseconds{5000}, self->state.ctx->cfg.requests.stall_timeout / 4);
}

/// Sample `i`'s first token of its current attempt is out: it streams, then what its decode
/// rank sent meanwhile.
void on_first_token(request_pointer self, int i, int32_t token, bool finished, const token_logprobs& lp,
                    kv_transport_kind transport) {
  auto& sm = sample(self, i);
  if (!finished) {
    sm.transport = transport;
    if (!sm.decoding)
      self->delayed_send(self, decode_start_timeout(self), decode_atom::value, sm.job);
  }
  sm.prefilled = true;
  if (!write_prompt_part(self, i))
    return;
  on_tokens(self, i, {token}, finished, lp);
  auto early = std::move(sample(self, i).early);
  for (auto& b : early) {
    count_kv_bytes(self, i, b);
    if (!sample(self, i).done && !self->state.done)
      on_tokens(self, i, b.tokens, b.finished, b.logprobs);
  }
}

} // namespace

void on_prefilled(request_pointer self, int i, prefill_result& r) {
  auto& st = self->state;
  auto& sm = sample(self, i);
  sm.prefill_claim.reset();
  if (sm.prefill_rank) {
    self->demonitor(sm.prefill_rank);
    sm.prefill_rank = nullptr;
  }
  if (r.error) {
    fail(self, 500, "prefill failed: " + error_text(r.error));
    return;
  }
  if (st.ticket)
    st.ticket->prefilled(); // its tokens leave the prefill queue
  st.progress = std::chrono::steady_clock::now();
  if (i == 0)
    st.timeline.close_prefill({r.queue_seconds, r.step_seconds, r.send_seconds, r.busy_seconds}, st.progress);
  if (sm.attempts == 1 && i == 0) {
    st.usage.cached_tokens = r.cached;
    st.ctx->cached_tokens->inc(static_cast<double>(r.cached));
  } else if (sm.attempts > 1) {
    // Usage reports the first attempt's hit; what a resubmission reused shows here.
    st.ctx->resubmitted_cached_tokens->inc(static_cast<double>(r.cached));
  }
  if (r.snapshot_hit)
    st.ctx->snapshot_hits->with({r.snapshot_remote ? "remote" : "local"}).inc();
  // One transfer, however many samples its KV starts on the decode rank.
  if (!r.finished || std::any_of(r.samples.begin(), r.samples.end(), [](const parallel_sample& x) { return !x.finished; }))
    st.ctx->kv_transfers->with({to_string(r.transport)}).inc();
  if (st.conv.sampling.vllm_prompt_logprobs >= 0 || st.conv.sampling.prompt_logprobs >= 0)
    keep_prompt_scores(self, r.prompt_logprobs);
  const auto job = sm.job;
  on_first_token(self, i, r.first_token, r.finished, r.logprobs, r.transport);
  // The samples that rode on this prefill: each its own first token.
  for (auto& x : r.samples) {
    if (st.done || sample(self, i).job != job)
      return;
    if (auto* rider = st.sample_of_job(x.id); rider && rider->rides && !rider->done && !rider->prefilled)
      on_first_token(self, rider->index, x.first_token, x.finished, x.logprobs, r.transport);
  }
}

void check_decode_started(request_pointer self, uint64_t job) {
  auto& st = self->state;
  auto* sm = st.sample_of_job(job);
  if (st.done || sm == nullptr || sm->done || sm->job != job || sm->decoding || !sm->prefilled)
    return;
  log().warn("request={} sample {}: no token from its decode rank {} ms after its prefill (its KV was lost on the "
             "way); resubmitting",
             st.id, sm->index, decode_start_timeout(self).count());
  attempt(self, sm->index);
}

} // namespace deepinfer::actors
