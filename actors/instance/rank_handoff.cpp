// The prefill rank's hand-off (DESIGN §1 step 5): a prefilled sequence's KV goes to the job's
// decode rank over the transport that fits the pair, and the decode rank is told to start it.

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/instance/rank_prefill.hpp"
#include "actors/transport/kv_transport.hpp"

namespace deepinfer::actors {

namespace {

/// The sequences the decode rank starts from a job's KV: none for n = 1 (the one exported),
/// else the job's own sample (unless its first token ended it) and each of its parallel
/// samples that goes on.
std::vector<parallel_sample> decoding_samples(const prefill_task& t) {
  std::vector<parallel_sample> out;
  if (t.out.samples.empty())
    return out;
  if (!t.out.finished)
    out.push_back({t.job.id, t.job.sampling.seed, t.out.first_token, false, {}});
  for (const auto& x : t.out.samples)
    if (!x.finished)
      out.push_back({x.id, x.seed, x.first_token, false, {}});
  return out;
}

} // namespace

void hand_off(rank_pointer self, prefill_task& t, const caf::actor& decode) {
  auto& st = self->state;
  auto& transport = choose_kv_transport(decode.node() == self->node(), !t.job.decode_rdma.empty());
  t.out.transport = transport.kind();
  t.promise.deliver(t.out);
  auto bytes = st.engine->export_sequence(t.req.seq);
  st.engine->free(t.req.seq);
  caf::error err;
  kv_handoff h;
  h.cache_salt = t.job.cache_salt;
  h.traffic = t.job.traffic;
  h.images = marks_of(t.job);
  h.samples = decoding_samples(t);
  if (!bytes)
    err = make_error(errc::engine_export_failed, "cannot export the sequence");
  else
    err = transport.send(t.job.id, std::move(*bytes), h);
  if (err) {
    std::vector<uint64_t> ids{t.job.id};
    if (!h.samples.empty()) {
      ids.clear();
      for (const auto& x : h.samples)
        ids.push_back(x.id);
    }
    if (auto sink = caf::actor_cast<caf::actor>(t.job.sink))
      for (auto id : ids) {
        token_batch fail;
        fail.id = id;
        fail.finished = true;
        fail.error = err;
        caf::send_as(caf::actor_cast<caf::actor>(self), sink, tokens_atom::value, std::move(fail));
      }
    return;
  }
  self->send(caf::actor_cast<rank_actor>(decode), decode_atom::value, std::move(h), t.job.sampling,
             std::move(t.job.sink));
}

} // namespace deepinfer::actors
