#include "actors/instance/rank_prefill.hpp"

#include "actors/logprobs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/log.hpp"
#include "actors/swa/snapshot_fetch.hpp"
#include "engine/cost_profile.hpp"
#include "recipe/base/assert.hpp"

namespace deepinfer::actors {

namespace {

/// The chunk scheduler of a rank's engine, made at its first prefill.
engine::prefill_scheduler& scheduler(rank_pointer self) {
  auto& st = self->state;
  if (!st.scheduler) {
    auto& ec = st.cfg.engine;
    if (!ec.prefill_cost) {
      engine::cost_profile::config setup{ec.threads, ec.cpu_isa};
      setup.backend = ec.backend;
      auto fit = engine::cost_profile::ensure(ec.model_dir, setup);
      // A model the rank loaded always profiles (the same engine, one more sequence); a failure
      // here is a bug in the profile.
      DEEPINFER_ASSERT(fit.fit, "rank={} cannot fit the prefill cost model: {}", st.cfg.rank, fit.error);
      if (!fit.warning.empty())
        log().warn("rank={} {}", st.cfg.rank, fit.warning);
      ec.prefill_cost = fit.fit->model;
    }
    engine::prefill_scheduler::config sc;
    sc.step_budget_ns = ec.prefill_step_ns;
    sc.long_prompt_steps = ec.prefill_long_steps;
    // On a CPU the finishing decoder pass alone can outlast a step: never split it off.
    sc.finish_over_budget = true;
    const auto& k = ec.prefill_cost->coefficients();
    log().info("rank={} prefill steps of {:.1f} ms; fitted chunk cost a0={:.3g} a1={:.3g} a2={:.3g} a3={:.3g} "
               "f0={:.3g} f1={:.3g} s",
               st.cfg.rank, ec.prefill_step_ns / 1e6, k.a0, k.a1, k.a2, k.a3, k.f0, k.f1);
    st.scheduler = std::make_unique<engine::prefill_scheduler>(sc, *st.engine, *ec.prefill_cost);
  }
  return *st.scheduler;
}

/// Answers the job with its error and forgets it (its sequence, if any, is already freed).
void fail_prefill(rank_pointer self, uint64_t id, caf::error error) {
  auto& st = self->state;
  auto it = st.prefills.find(id);
  it->second.out.error = std::move(error);
  it->second.promise.deliver(std::move(it->second.out));
  st.prefills.erase(it);
  drain_forget(self, id);
}

/// A job's prefill ended (`p`): keeps its snapshots, answers the first token, hands it over.
void finish_prefill(rank_pointer self, uint64_t id, engine::prefill_progress& p) {
  auto& st = self->state;
  auto node = st.prefills.extract(id);
  auto& t = node.mapped();
  const auto now = std::chrono::steady_clock::now();
  const auto stepped = t.stepped.value_or(now);
  t.out.queue_seconds = std::chrono::duration<double>(stepped - t.received).count();
  t.out.step_seconds = std::chrono::duration<double>(now - stepped).count();
  auto& cache = st.cfg.engine.cache;
  const bool ok = p.status == engine::engine_status::ok && p.done;
  // The prefill's snapshots serve the same prompt sent again and the next turn, once decode
  // has stored the blocks they end at.
  if (cache && ok)
    for (auto& snap : st.engine->export_snapshots(t.req.seq))
      cache->store_snapshot(t.req.tokens, snap.end, std::move(snap.bytes), t.job.cache_salt, marks_of(t.job));
  t.out.cached = t.req.hit_length;
  if (ok) {
    if (st.prefilled_tokens)
      st.prefilled_tokens->inc(static_cast<double>(static_cast<int64_t>(t.req.tokens.size()) - t.req.hit_length));
    t.out.first_token = p.first.id;
    for (const auto& x : p.prompt) {
      append_logprobs(t.out.prompt_logprobs, x, t.req.sampling.prompt_logprobs);
      t.out.prompt_logprobs.rank.push_back(x.rank);
    }
    if (t.job.sampling.logprobs || t.job.sampling.top_logprobs > 0)
      append_logprobs(t.out.logprobs, p.first, t.job.sampling.top_logprobs);
    auto& stops = t.job.sampling.stop_ids;
    auto ends = [&](int32_t token) {
      return t.job.sampling.max_tokens <= 1 || std::find(stops.begin(), stops.end(), token) != stops.end();
    };
    t.out.finished = ends(p.first.id);
    for (std::size_t i = 0; i < t.job.samples.size() && i < p.samples.size(); ++i) {
      auto x = t.job.samples[i];
      x.first_token = p.samples[i].id;
      x.finished = ends(x.first_token);
      if (t.job.sampling.logprobs || t.job.sampling.top_logprobs > 0)
        append_logprobs(x.logprobs, p.samples[i], t.job.sampling.top_logprobs);
      t.out.samples.push_back(std::move(x));
    }
  } else
    t.out.error = make_error(errc_of(p.status), p.error.empty() ? "prefill failed" : p.error);
  auto decode = caf::actor_cast<caf::actor>(t.job.decode_rank);
  // The KV goes on while any sample does (the job's own, or a parallel one).
  const bool goes_on = !t.out.finished || std::any_of(t.out.samples.begin(), t.out.samples.end(),
                                                      [](const parallel_sample& x) { return !x.finished; });
  if (ok && goes_on && !decode)
    t.out.error = make_error(errc::no_decode_rank, "the job names no decode rank");
  if (ok && !goes_on && cache) {
    // The first token ended it (max_tokens 1, a stop): no decode rank stores its blocks; this does.
    cache->store_async(t.req.tokens, 0, static_cast<int64_t>(t.req.tokens.size()) / 128,
                       [&](int64_t i) { return st.engine->export_block(t.req.seq, i); }, t.job.cache_salt,
                       t.job.traffic, marks_of(t.job));
  }
  if (!ok || !goes_on || t.out.error) {
    st.engine->free(t.req.seq);
    t.promise.deliver(std::move(t.out));
    drain_forget(self, id);
    return;
  }
  hand_off(self, t, decode);
  drain_forget(self, id);
}

/// The job goes on without its cached prefix (its KV was refused or could not be read).
void forget_hit(prefill_task& t) {
  t.req.hit_length = 0;
  t.req.hit_blocks.clear();
  t.req.snapshot.reset();
  t.req.blocks_later = false;
  t.out.snapshot_hit = false;
}

/// Starts the chunk loop. While the rank serves a step another rank started, the first chunk
/// runs at once, before the next round's message: its forward joins that step's next round.
void start_chunking(rank_pointer self) {
  self->state.chunking = true;
  if (self->state.ep_serving && !self->state.in_chunk)
    prefill_chunk(self);
  else
    self->send(self, chunk_atom::value);
}

/// Moves fetched jobs into the scheduler, oldest first, while the pool has room for them.
void admit_waiting(rank_pointer self) {
  auto& st = self->state;
  auto& sched = scheduler(self);
  while (!st.admitting.empty()) {
    auto id = st.admitting.front();
    auto& t = st.prefills.at(id);
    auto p = sched.submit(t.req);
    if (p.status == engine::engine_status::bad_kv && t.req.hit_length > 0) {
      log().warn("rank={} cached KV rejected ({}); prefilling without it", st.cfg.rank, p.error);
      forget_hit(t); // blocks still on their way are dropped when they land
      p = sched.submit(t.req);
    }
    // Prefills in flight give their blocks back when they end: wait for them.
    if (p.status == engine::engine_status::does_not_fit && !st.running.empty())
      break;
    st.admitting.pop_front();
    if (p.status != engine::engine_status::ok) {
      fail_prefill(self, id, make_error(errc_of(p.status), p.error.empty() ? "prefill failed" : p.error));
      continue;
    }
    t.running = true;
    // Imported into the pool: the buffers serve the next lookup (no zero-filled 34 MB per hit).
    if (auto& cache = st.cfg.engine.cache)
      cache->recycle(std::move(t.req.hit_blocks));
    t.req.hit_blocks = {};
    st.running[t.req.seq.value] = id;
  }
  // A hit without its window snapshot replays the encoder window when submitted: a step.
  if (!end_ep_step(self))
    return;
  if (!st.running.empty() && !st.chunking)
    start_chunking(self);
  report(self);
}

/// Queues a job whose blocks are in host memory for the scheduler; one larger than the whole
/// pool fails at once instead of holding up the queue.
void queue_for_pool(rank_pointer self, uint64_t id) {
  auto& st = self->state;
  auto& t = st.prefills.at(id);
  const auto blocks = static_cast<int64_t>((t.req.tokens.size() + 127) / 128);
  if (blocks > st.engine->pool().geometry().blocks) {
    fail_prefill(self, id, make_error(errc::engine_out_of_kv, "kv pool full"));
  } else {
    // The hit is known now (none without a cache, or after a restart without it): the images
    // its encoder passes reach get their embeddings.
    attach_images(st, *st.engine, t.job, t.req);
    st.admitting.push_back(id);
  }
  admit_waiting(self);
}

} // namespace

void start_prefill(rank_pointer self, prefill_job& job,
                   caf::typed_response_promise<prefill_result> promise) {
  auto& st = self->state;
  busy_log::scope in_start{st.busy}; // a job behind this one waits for its start too
  prefill_result out;
  out.id = job.id;
  if (job.sent_unix_us > 0) {
    out.send_seconds = static_cast<double>(in_start.begin() - job.sent_unix_us) / 1e6;
    out.busy_seconds = static_cast<double>(st.busy.overlap(job.sent_unix_us, in_start.begin())) / 1e6;
  }
  if (!st.engine || st.prefills.count(job.id) > 0) {
    out.error = st.engine ? make_error(errc::engine_invalid_request, "a prefill job with this id is already here")
                          : make_error(errc::engine_missing, "rank has no engine");
    promise.deliver(std::move(out));
    return;
  }
  const auto id = job.id;
  auto& t = st.prefills[id];
  t.out = std::move(out);
  t.promise = std::move(promise);
  t.req.seq = engine::sequence_id{st.next_seq++};
  t.req.tokens = std::move(job.tokens);
  t.req.sampling = job.sampling;
  for (const auto& x : job.samples)
    t.req.sample_seeds.push_back(x.seed);
  t.req.mode = st.cfg.engine.decoder_mode;
  const auto prompt_length = job.prompt_length > 0 ? std::min<int64_t>(job.prompt_length, static_cast<int64_t>(t.req.tokens.size()))
                                                    : static_cast<int64_t>(t.req.tokens.size());
  if (prompt_length < static_cast<int64_t>(t.req.tokens.size()))
    t.req.decoder_from = std::max<int64_t>(0, prompt_length - 128);
  // Prompt logprobs score every prompt position: the decoder over the whole prompt, from the
  // encoder's output at every position (so no hit). A resubmission's tokens hold its output, and
  // its prompt was scored by the first attempt: it goes as any other.
  const bool scores_prompt = t.req.sampling.prompt_logprobs >= 0 && prompt_length == static_cast<int64_t>(t.req.tokens.size());
  if (scores_prompt)
    t.req.mode = engine::decoder_mode::full;
  else
    t.req.sampling.prompt_logprobs = -1;
  t.job = std::move(job);
  if (auto err = check_images(*st.engine, t.job)) {
    fail_prefill(self, id, std::move(err));
    return;
  }
  // A requester that goes away (client gone, entrypoint node dead) takes its job along.
  if (auto sink = caf::actor_cast<caf::actor>(t.job.sink))
    self->monitor(sink);
  auto cache = st.cfg.engine.cache;
  if (!cache || scores_prompt) {
    queue_for_pool(self, id);
    return;
  }
  // The hit's blocks (and a remote snapshot) load on the fetcher's thread; this rank keeps
  // stepping the jobs it has meanwhile.
  if (!st.fetcher)
    st.fetcher = std::make_unique<block_fetcher>();
  t.fetching = std::make_shared<fetched_blocks>();
  st.fetcher->plan([slot = t.fetching, tokens = t.req.tokens, prompt_length, cache, end = t.job.snapshot_end,
                    owner = t.job.snapshot_owner, sys = &self->system(), me = self->address(), id,
                    rank = st.cfg.rank, salt = t.job.cache_salt, images = marks_of(t.job),
                    fetcher = st.fetcher.get()] {
    if (owner)
      slot->snapshot_remote = fetch_remote_snapshot(*sys, *cache, tokens, end, owner, rank, salt, images);
    const auto t0 = std::chrono::steady_clock::now();
    auto plan = cache->plan(tokens, prompt_length, salt, images);
    // A resubmission (prompt + what it generated) continues as its undisturbed run only from an
    // exact hit: a window replayed without its snapshot (the prefill node that kept it died) is
    // approximate, and so would be the continuation. Such a hit is common since a prompt's blocks
    // are stored when its KV reaches the decode side (issue 17): it prefills cold instead.
    if (prompt_length < static_cast<int64_t>(tokens.size()) && plan.length > 0 && !plan.snapshot)
      plan = {};
    slot->plan = plan;
    {
      std::lock_guard lock{slot->m};
      slot->planned = true;
    }
    slot->cv.notify_one();
    // A rank that is gone meanwhile does not hear of it.
    if (auto r = caf::actor_cast<caf::strong_actor_ptr>(me))
      caf::anon_send(caf::actor_cast<rank_actor>(r), planned_atom::value, id);
    if (plan.length == 0)
      return;
    fetcher->read([slot, plan, cache, me, id, rank, t0] {
      slot->blocks = cache->read(plan);
      log().debug("rank={} job={} hit={} blocks read={} took={}us", rank, id, plan.length,
                  slot->blocks.size(),
                  std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
      if (auto r = caf::actor_cast<caf::strong_actor_ptr>(me))
        caf::anon_send(caf::actor_cast<rank_actor>(r), loaded_atom::value, id);
    });
  });
  // The plan is usually ready within a millisecond (an index lookup): waiting that long here
  // admits the job in this turn of the mailbox. The fetcher's message would be read only after
  // the step the rank runs next, a whole step (100 ms by default) later. A slow plan (a remote
  // snapshot, plans queued ahead of it) still comes by that message.
  constexpr auto plan_wait = std::chrono::milliseconds{2};
  bool planned = false;
  {
    auto& slot = *t.fetching;
    std::unique_lock lock{slot.m};
    planned = slot.cv.wait_for(lock, plan_wait, [&] { return slot.planned; });
  }
  if (planned)
    on_hit_planned(self, id);
  report(self);
}

void on_hit_planned(rank_pointer self, uint64_t id) {
  auto& st = self->state;
  auto it = st.prefills.find(id);
  if (it == st.prefills.end() || !it->second.fetching)
    return;
  auto& t = it->second;
  if (std::exchange(t.fetching->plan_taken, true))
    return; // start_prefill took it already
  auto& plan = t.fetching->plan;
  if (t.dropped) { // cancelled while planning: without blocks to wait for it goes now
    if (plan.length == 0) {
      st.prefills.erase(it);
      report(self);
      drain_forget(self, id);
    }
    return;
  }
  t.out.snapshot_remote = t.fetching->snapshot_remote;
  t.out.snapshot_hit = plan.snapshot != nullptr;
  t.req.hit_length = plan.length;
  if (plan.snapshot)
    t.req.snapshot = *plan.snapshot;
  t.req.blocks_later = plan.length > 0;
  if (!t.req.blocks_later)
    t.fetching.reset(); // nothing more comes
  queue_for_pool(self, id);
}

namespace {

/// Job `id`'s planned hit fell through (a block could not be read or was refused): it starts
/// again without one (slower, never wrong).
void restart_without_hit(rank_pointer self, uint64_t id, const std::string& why) {
  auto& st = self->state;
  auto& t = st.prefills.at(id);
  log().warn("rank={} job={} cached KV unusable ({}); prefilling without it", st.cfg.rank, id, why);
  if (t.running) {
    st.scheduler->cancel(t.req.seq);
    st.engine->free(t.req.seq);
    st.running.erase(t.req.seq.value);
    t.running = false;
  }
  std::erase(st.admitting, id);
  forget_hit(t);
  queue_for_pool(self, id);
}

} // namespace

void on_blocks_loaded(rank_pointer self, uint64_t id) {
  auto& st = self->state;
  auto it = st.prefills.find(id);
  if (it == st.prefills.end() || !it->second.fetching)
    return;
  auto& t = it->second;
  auto slot = std::move(t.fetching);
  if (t.dropped) {
    st.prefills.erase(it);
    report(self);
    drain_forget(self, id);
    return;
  }
  auto& blocks = slot->blocks;
  auto& cache = st.cfg.engine.cache;
  if (!t.req.blocks_later) { // the job went on without them
    cache->recycle(std::move(blocks));
    return;
  }
  if (static_cast<int64_t>(blocks.size() * 128) != t.req.hit_length) {
    restart_without_hit(self, id, "a cached block could not be read");
    return;
  }
  if (!t.running) { // still waiting for pool room: the blocks go in with it
    t.req.hit_blocks = std::move(blocks);
    t.req.blocks_later = false;
    return;
  }
  std::string err;
  const auto status = st.engine->import_hit_blocks(t.req.seq, blocks, &err);
  cache->recycle(std::move(blocks));
  if (status != engine::engine_status::ok) {
    restart_without_hit(self, id, err);
    return;
  }
  // Its decoder may be all that is left: step it.
  if (!st.chunking)
    start_chunking(self);
}

void prefill_chunk(rank_pointer self) {
  auto& st = self->state;
  busy_log::scope in_step{st.busy};
  const bool nested = std::exchange(st.in_chunk, true);
  struct restore {
    bool& flag;
    bool to;
    ~restore() { flag = to; }
  } restore_in_chunk{st.in_chunk, nested};
  if (st.running.empty()) {
    st.chunking = false;
    return;
  }
  // A finished prompt's first token is whole once its forward is (every round of it went
  // through: the group has not failed): it is answered at once, before the step's later
  // chunks (a long prompt's, after a short one) and before the group's step ends (which waits
  // for the other ranks' forwards).
  for (const auto& [seq, id] : st.running)
    if (auto it = st.prefills.find(id); it != st.prefills.end() && !it->second.stepped)
      it->second.stepped = std::chrono::steady_clock::now();
  auto done = scheduler(self).step([&](engine::sequence_id seq, engine::prefill_progress& p) {
    auto it = st.running.find(seq.value);
    if (it == st.running.end() || (st.member != nullptr && st.member->failed()))
      return;
    auto id = it->second;
    st.running.erase(it);
    finish_prefill(self, id, p);
  });
  if (!end_ep_step(self))
    return;
  ++st.steps;
  // Nothing ran: every job in the scheduler waits for its blocks, whose arrival re-arms the loop.
  if (done.chunks.empty())
    st.chunking = false;
  const bool stepping = st.chunking;
  admit_waiting(self); // re-arms the loop itself when it was stopped and admits a job
  if (!stepping)
    return;
  if (st.running.empty())
    st.chunking = false;
  else
    self->send(self, chunk_atom::value);
}

bool cancel_prefill(rank_pointer self, uint64_t id, const std::string& why) {
  auto& st = self->state;
  auto it = st.prefills.find(id);
  if (it == st.prefills.end() || it->second.dropped)
    return false;
  auto& t = it->second;
  log().info("rank={} prefill job {} dropped: {}", st.cfg.rank, id, why);
  if (t.running) {
    st.scheduler->cancel(t.req.seq);
    st.engine->free(t.req.seq);
    st.running.erase(t.req.seq.value);
  }
  std::erase(st.admitting, id);
  auto promise = t.promise;
  auto out = std::move(t.out);
  if (t.fetching)
    t.dropped = true;
  else
    st.prefills.erase(it);
  admit_waiting(self); // its blocks may let a waiting job in; reports the pool
  // Answered last: whoever hears of it sees the blocks back already.
  out.error = make_error(errc::request_cancelled, why);
  promise.deliver(std::move(out));
  drain_forget(self, id);
  return true;
}

void drop_prefills_of(rank_pointer self, const caf::actor_addr& gone) {
  std::vector<uint64_t> ids;
  for (auto& [id, t] : self->state.prefills)
    if (!t.dropped && caf::actor_cast<caf::actor_addr>(t.job.sink) == gone)
      ids.push_back(id);
  for (auto id : ids)
    cancel_prefill(self, id, "the requester is gone");
}

} // namespace deepinfer::actors
