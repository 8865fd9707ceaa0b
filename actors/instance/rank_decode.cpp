// The decode rank's steps (DESIGN §5.3): synchronous (this thread steps the batch, then streams
// the step's tokens), or asynchronous (issue 18: engine::decode_loop's thread steps it back to
// back while this thread streams the step before). Both deliver a step's tokens the same way.

#include <chrono>
#include <span>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/errors.hpp"
#include "actors/instance/rank_state.hpp"
#include "actors/log.hpp"
#include "actors/logprobs.hpp"

namespace deepinfer::actors {

namespace {

/// The sequences a step runs: every active one but those offered for a handoff (not a token
/// more here until its sink answers).
std::vector<engine::decode_loop::member> stepping_members(const rank_state& st) {
  std::vector<engine::decode_loop::member> batch;
  for (const auto& [id, d] : st.active)
    if (!d.moving)
      batch.push_back({id, d.seq});
  return batch;
}

/// Counts a step's drafts and acceptances under vLLM's names.
void count_drafts(rank_state& st, const std::vector<engine::verify_output>& outs) {
  if (!st.spec_drafts)
    return;
  for (const auto& o : outs) {
    if (o.drafted == 0)
      continue;
    st.spec_drafts->inc();
    st.spec_draft_tokens->inc(o.drafted);
    st.spec_accepted->inc(o.accepted);
    for (int32_t j = 0; j < o.accepted && j < engine::max_draft_positions; ++j)
      st.spec_accepted_at[static_cast<std::size_t>(j)]->inc();
  }
}

/// store_filled with the blocks the loop exported after the step (no engine call): false when they
/// do not reach back to the first block not stored yet (one the write queue refused earlier).
bool store_exported(rank_pointer self, decoding& d, engine::decode_loop::filled_blocks& f) {
  auto& cache = self->state.cfg.engine.cache;
  if (f.blocks.empty() || f.first > d.stored_blocks)
    return false;
  const int64_t full = f.first + static_cast<int64_t>(f.blocks.size());
  if (full <= d.stored_blocks)
    return true;
  d.stored_blocks = cache->store_async(
    f.tokens, d.stored_blocks, full,
    [&](int64_t i) -> std::optional<std::vector<std::byte>> { return std::move(f.blocks[static_cast<std::size_t>(i - f.first)]); },
    d.salt, d.traffic, d.images);
  note_unstored(self->state, d, full);
  return true;
}

/// Streams one step's tokens to their requests. First what needs no engine (the batches of
/// sequences that go on); then, holding the engine, the blocks that filled and the sequences that
/// ended: their last blocks are queued before their clients hear of the end (queued blocks hit
/// at once, so a next turn hits them). With the loop, taking the hold delivers later steps first:
/// a sequence that ended in this step has no tokens in them, and one that goes on has had this
/// step's batch already.
void deliver(rank_pointer self, const std::vector<uint64_t>& ids, std::vector<engine::verify_output>& outs,
             std::vector<engine::decode_loop::filled_blocks>* exported = nullptr) {
  auto& st = self->state;
  ++st.steps;
  count_drafts(st, outs);
  std::vector<uint64_t> filled;
  std::vector<std::pair<decoding, token_batch>> ended;
  auto* cache = st.cfg.engine.cache.get();
  for (std::size_t i = 0; i < outs.size() && i < ids.size(); ++i) {
    auto it = st.active.find(ids[i]);
    if (it == st.active.end())
      continue; // cancelled or handed off after the loop's step began: its token goes nowhere
    auto& d = it->second;
    token_batch b;
    b.id = ids[i];
    if (outs[i].status != engine::engine_status::ok) {
      b.finished = true;
      b.error = make_error(errc_of(outs[i].status), "decode step failed");
    } else {
      // Several tokens when drafts were accepted: the request actor streams them and cuts at a
      // stop string inside them as it does across batches.
      for (const auto& t : outs[i].tokens) {
        b.tokens.push_back(t.id);
        if (d.logprobs_top >= 0)
          append_logprobs(b.logprobs, t, d.logprobs_top);
      }
      b.finished = outs[i].finished;
      b.drafted = outs[i].drafted;
      b.accepted = outs[i].accepted;
      // A block it filled is written now, not when it ends (issue 17).
      d.length += static_cast<int64_t>(outs[i].tokens.size());
      if (!b.finished && cache && (d.length - 1) / 128 > d.stored_blocks &&
          !(exported && i < exported->size() && store_exported(self, d, (*exported)[i])))
        filled.push_back(ids[i]);
    }
    b.kv_bytes = std::exchange(d.kv_bytes, 0);
    if (b.finished && exported && i < exported->size() && (*exported)[i].released) {
      // The loop exported and freed it: what is left is stored from here, before its client
      // hears of the end.
      auto& f = (*exported)[i];
      if (cache) {
        store_exported(self, d, f);
        if (f.snapshot_end)
          cache->store_snapshot(f.tokens, *f.snapshot_end, f.snapshot, d.salt, d.images);
      }
      caf::send_as(caf::actor_cast<caf::actor>(self), d.sink, tokens_atom::value, std::move(b));
      st.active.erase(it);
      drain_forget(self, ids[i]);
      continue;
    }
    if (b.finished) {
      ended.emplace_back(std::move(d), std::move(b));
      st.active.erase(it);
      continue;
    }
    caf::send_as(caf::actor_cast<caf::actor>(self), d.sink, tokens_atom::value, std::move(b));
  }
  if (filled.empty() && ended.empty()) {
    report(self);
    return;
  }
  auto held = hold_engine(self);
  for (auto id : filled)
    if (auto it = st.active.find(id); it != st.active.end())
      store_filled(self, it->second);
  for (auto& [d, b] : ended) {
    const auto id = b.id;
    release(self, d);
    caf::send_as(caf::actor_cast<caf::actor>(self), d.sink, tokens_atom::value, std::move(b));
    drain_forget(self, id);
  }
  report(self);
}

/// Delivers the loop's finished steps, oldest first (also those a nested hold takes).
void pump(rank_pointer self) {
  auto& st = self->state;
  for (auto& r : st.loop->take())
    st.undelivered.push_back(std::move(r));
  while (!st.undelivered.empty()) {
    auto r = std::move(st.undelivered.front());
    st.undelivered.pop_front();
    if (r.failed) {
      // The group failed during the step: its forwards are garbage, nothing of it leaves.
      self->quit(make_error(errc::ep_group_failed, "its expert-parallel group failed"));
      st.undelivered.clear();
      return;
    }
    deliver(self, r.ids, r.outs, &r.filled);
  }
  if (st.idle_gauge)
    st.idle_gauge->set(st.loop->idle_fraction());
}

/// One synchronous decode step over every active sequence; re-arms itself while any remain, so
/// new sequences join the batch at the next step (continuous batching).
void decode_step(rank_pointer self) {
  auto& st = self->state;
  const auto compute_start = std::chrono::steady_clock::now();
  std::vector<engine::sequence_id> seqs;
  std::vector<uint64_t> ids;
  for (const auto& m : stepping_members(st)) {
    seqs.push_back(m.seq);
    ids.push_back(m.id);
  }
  if (seqs.empty()) {
    st.stepping = false;
    st.idle.pause(); // waiting for requests is not idling between steps
    return;
  }
  auto outs = engine::run_decode_step(*st.engine, st.planner.get(), seqs);
  if (!end_ep_step(self))
    return;
  st.idle.step(compute_start, std::chrono::steady_clock::now(), true);
  if (st.idle_gauge)
    st.idle_gauge->set(st.idle.fraction());
  deliver(self, ids, outs);
  self->send(self, step_atom::value);
}

} // namespace

engine_hold::engine_hold(rank_pointer self) {
  auto& st = self->state;
  if (!st.loop)
    return;
  self_ = self;
  if (st.holds++ > 0)
    return;
  st.loop->acquire();
  pump(self);
}

engine_hold::~engine_hold() {
  if (self_ == nullptr)
    return;
  auto& st = self_->state;
  if (--st.holds > 0)
    return;
  // The batch as the rank knows it now: every finished step is delivered and none ran since.
  st.loop->set_batch(stepping_members(st));
  st.loop->release();
}

void release(rank_pointer self, decoding& d) {
  auto& st = self->state;
  if (auto& cache = st.cfg.engine.cache) {
    store_filled(self, d);
    // The last window decode copied at a 128 boundary (DESIGN §4.2).
    if (auto at = st.engine->snapshot_end(d.seq))
      cache->store_snapshot(st.engine->tokens(d.seq), *at, *st.engine->export_snapshot(d.seq), d.salt, d.images);
  }
  st.engine->free(d.seq);
}

void ensure_stepping(rank_pointer self) {
  auto& st = self->state;
  if (st.loop || st.stepping)
    return; // the loop steps whatever the last hold left in its batch
  st.stepping = true;
  self->send(self, step_atom::value);
}

void start_decode_loop(rank_pointer self) {
  auto& st = self->state;
  if (!st.engine || !st.cfg.engine.async_scheduling)
    return;
  engine::decode_loop::hooks hooks;
  hooks.end_step = ep_step_ender(self);
  // From the loop's thread: a weak address, so the loop keeps no stopped rank alive.
  hooks.ready = [addr = self->address()] {
    if (auto me = caf::actor_cast<rank_actor>(addr))
      caf::anon_send(me, step_atom::value);
  };
  engine::decode_loop::options opt;
  // Blocks that fill are exported on the loop's thread and stored from here without a hold.
  opt.export_filled_blocks = st.cfg.engine.cache != nullptr;
  // ... and a sequence that ends is freed there, its last blocks and window stored from here.
  opt.release_finished = true;
  st.loop = std::make_unique<engine::decode_loop>(*st.engine, std::move(st.planner), std::move(hooks), opt);
}

void on_step(rank_pointer self) {
  auto& st = self->state;
  if (!st.loop) {
    decode_step(self);
    return;
  }
  // Without holding the engine: the loop runs the next step meanwhile.
  pump(self);
}

} // namespace deepinfer::actors
