#include "actors/rank.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <map>
#include <set>
#include <utility>
#include <memory>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/errors.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/kv_transport.hpp"
#include "actors/log.hpp"
#include "actors/prefix_cache.hpp"
#include "engine/rank_engine.hpp"

namespace deepinfer::actors {

namespace {

/// Limit for fetching an SWA snapshot from another node (a replay is the fallback).
constexpr auto snapshot_fetch_timeout = std::chrono::milliseconds(500);

/// One sequence in the decode batch.
struct decoding {
  engine::sequence_id seq;
  caf::actor sink;
  /// Bytes of the handoff, reported with the first batch.
  uint64_t kv_bytes = 0;
};

struct rank_state {
  rank_config cfg;
  uint64_t steps = 0;
  std::unique_ptr<engine::rank_engine> engine;
  /// Request id -> decoding sequence; ordered so batches are deterministic.
  std::map<uint64_t, decoding> active;
  uint64_t next_seq = 1;
  bool stepping = false;
  /// Ids cancelled before their KV arrived.
  std::set<uint64_t> cancelled;
  /// Pool use and batch size gauges (null without a registry).
  http::metrics_registry::gauge* pool_used = nullptr;
  http::metrics_registry::gauge* active_gauge = nullptr;
  static inline const char* name = "deepinfer.rank";
};

using rank_pointer = rank_actor::stateful_pointer<rank_state>;

engine::sampling_params to_params(const sampling_spec& s) {
  engine::sampling_params p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.seed = s.seed;
  p.stop_ids = s.stop_ids;
  p.max_tokens = s.max_tokens;
  return p;
}

/// The SWA directory named another node's memory for the window ending at the job's hit: when
/// this node lacks that snapshot, fetch it (bounded wait; this rank has its own thread) and keep
/// it here. True when a snapshot arrived.
bool fetch_snapshot(rank_pointer self, const prefill_job& job) {
  auto& cache = *self->state.cfg.engine.cache;
  auto key = cache.key_at(job.tokens, job.snapshot_end);
  if (!key || cache.local_snapshot(kv::block_key{key->first, key->second}))
    return false;
  std::vector<std::byte> bytes;
  caf::scoped_actor fetcher{self->system()};
  fetcher->request(caf::actor_cast<snapshot_server_actor>(job.snapshot_owner), snapshot_fetch_timeout,
                   swa_fetch_atom::value, wire_key{key->first, key->second})
    .receive(
      [&](byte_payload& p) {
        bytes.resize(p.bytes.size());
        std::memcpy(bytes.data(), p.bytes.data(), p.bytes.size());
      },
      [&](caf::error& e) {
        log().info("rank={} remote SWA snapshot unavailable: {}", self->state.cfg.rank, self->system().render(e));
      });
  return !bytes.empty() && cache.store_snapshot(job.tokens, job.snapshot_end, std::move(bytes));
}

/// Prefills `job` and hands its KV to the job's decode rank over the transport that fits the
/// pair (DESIGN §1 step 5). Answers the first token either way.
void run_prefill(rank_pointer self, prefill_job& job, caf::typed_response_promise<prefill_result> promise) {
  auto& st = self->state;
  prefill_result out;
  out.id = job.id;
  if (!st.engine) {
    out.error = "rank has no engine";
    promise.deliver(std::move(out));
    return;
  }
  engine::prefill_request req;
  req.seq = engine::sequence_id{st.next_seq++};
  req.tokens = job.tokens;
  req.sampling = to_params(job.sampling);
  req.mode = st.cfg.engine.decoder_mode;
  auto& cache = st.cfg.engine.cache;
  if (cache && job.snapshot_owner)
    out.snapshot_remote = fetch_snapshot(self, job);
  if (cache) {
    auto hit = cache->lookup(job.tokens);
    out.snapshot_hit = hit.snapshot != nullptr;
    req.hit_length = hit.length;
    req.hit_blocks = std::move(hit.blocks);
    if (hit.snapshot)
      req.snapshot = *hit.snapshot;
  }
  auto p = st.engine->prefill(req);
  if (p.status == engine::engine_status::bad_kv && req.hit_length > 0) {
    log().warn("rank={} cached KV rejected ({}); prefilling without it", st.cfg.rank, p.error);
    st.engine->free(req.seq);
    req.hit_length = 0;
    req.hit_blocks.clear();
    req.snapshot.reset();
    p = st.engine->prefill(req);
  }
  if (cache)
    cache->recycle(std::move(req.hit_blocks)); // imported into the pool by now
  // The prefill's snapshots serve the same prompt sent again and the next turn, once decode
  // has stored the blocks they end at.
  if (cache && p.status == engine::engine_status::ok && p.done)
    for (auto& snap : st.engine->export_snapshots(req.seq))
      cache->store_snapshot(job.tokens, snap.end, std::move(snap.bytes));
  out.cached = req.hit_length;
  ++st.steps;
  if (p.status != engine::engine_status::ok || !p.done) {
    out.error = p.error.empty() ? "prefill failed" : p.error;
    st.engine->free(req.seq);
    promise.deliver(std::move(out));
    return;
  }
  out.first_token = p.first.id;
  auto& stops = job.sampling.stop_ids;
  out.finished = job.sampling.max_tokens <= 1
                 || std::find(stops.begin(), stops.end(), p.first.id) != stops.end();
  auto decode = caf::actor_cast<caf::actor>(job.decode_rank);
  if (!out.finished && !decode)
    out.error = "the job names no decode rank";
  if (out.finished || !out.error.empty()) {
    st.engine->free(req.seq);
    promise.deliver(std::move(out));
    return;
  }
  // The first token leaves before the KV is exported (tens of ms at 30K): TTFT does not wait
  // for the handoff. A failure from here on reaches the request as a token batch error.
  auto& transport = choose_kv_transport(decode.node() == self->node(), !job.decode_rdma.empty());
  out.transport = transport.name();
  promise.deliver(out);
  auto bytes = st.engine->export_sequence(req.seq);
  st.engine->free(req.seq);
  std::string err;
  kv_handoff h;
  if (!bytes)
    err = "cannot export the sequence";
  else if (!transport.send(job.id, std::move(*bytes), h, &err))
    err = "KV transport " + std::string{transport.name()} + ": " + err;
  if (!err.empty()) {
    token_batch fail;
    fail.id = job.id;
    fail.finished = true;
    fail.error = err;
    if (auto sink = caf::actor_cast<caf::actor>(job.sink))
      caf::send_as(caf::actor_cast<caf::actor>(self), sink, tokens_atom::value, std::move(fail));
    return;
  }
  self->send(caf::actor_cast<rank_actor>(decode), decode_atom::value, std::move(h), job.sampling,
             std::move(job.sink));
}

/// Writes the full blocks of a sequence (prompt and output) to the prefix cache, then frees it.
void release(rank_pointer self, engine::sequence_id seq) {
  auto& st = self->state;
  if (auto& cache = st.cfg.engine.cache) {
    auto tokens = st.engine->tokens(seq);
    // The last token has no KV yet: the next decode step would have fed it.
    auto full = tokens.empty() ? 0 : static_cast<int64_t>(tokens.size() - 1) / 128;
    cache->store(tokens, full, [&](int64_t i) { return st.engine->export_block(seq, i); });
    // The last window decode copied at a 128 boundary (DESIGN §4.2).
    if (auto at = st.engine->snapshot_end(seq))
      cache->store_snapshot(tokens, *at, *st.engine->export_snapshot(seq));
  }
  st.engine->free(seq);
}

/// Publishes pool use and batch size.
void report(rank_pointer self) {
  auto& st = self->state;
  if (!st.pool_used || !st.engine)
    return;
  auto& pool = st.engine->pool();
  st.pool_used->set(static_cast<double>(pool.geometry().blocks - pool.free_blocks()));
  st.active_gauge->set(static_cast<double>(st.active.size()));
}

/// Drops a decoding sequence (cancelled, or its client is gone), keeping its full blocks.
void drop(rank_pointer self, std::map<uint64_t, decoding>::iterator it) {
  auto& st = self->state;
  release(self, it->second.seq);
  st.active.erase(it);
  report(self);
}

void start_decode(rank_pointer self, kv_handoff& h, const sampling_spec& s,
                  const caf::strong_actor_ptr& sink_ptr) {
  auto& st = self->state;
  auto sink = caf::actor_cast<caf::actor>(sink_ptr);
  auto* transport = kv_transport_named(h.transport);
  std::string err;
  auto bytes = transport ? transport->receive(h, &err) : std::nullopt;
  if (!transport)
    err = "unknown KV transport '" + h.transport + "'";
  if (!sink)
    return;
  if (st.cancelled.erase(h.id) > 0)
    return;  // cancelled while its KV was on the way
  token_batch fail;
  fail.id = h.id;
  fail.finished = true;
  if (!st.engine)
    err = "rank has no engine";
  if (!bytes || !st.engine) {
    fail.error = "cannot receive the sequence: " + err;
    caf::send_as(caf::actor_cast<caf::actor>(self), sink, tokens_atom::value, std::move(fail));
    return;
  }
  engine::sequence_id seq{st.next_seq++};
  std::span<const std::byte> span{bytes->data(), bytes->size()};
  if (st.engine->import_sequence(seq, span, to_params(s), &err) != engine::engine_status::ok) {
    fail.error = "cannot import the sequence: " + err;
    caf::send_as(caf::actor_cast<caf::actor>(self), sink, tokens_atom::value, std::move(fail));
    return;
  }
  // A request actor that goes away (client gone, entrypoint node dead) takes its sequence along.
  self->monitor(sink);
  st.active[h.id] = decoding{seq, sink, span.size()};
  report(self);
  if (!st.stepping) {
    st.stepping = true;
    self->send(self, step_atom::value);
  }
}

/// One decode step over every active sequence; re-arms itself while any remain, so new
/// sequences join the batch at the next step (continuous batching).
void decode_step(rank_pointer self) {
  auto& st = self->state;
  if (st.active.empty()) {
    st.stepping = false;
    return;
  }
  std::vector<engine::sequence_id> seqs;
  std::vector<uint64_t> ids;
  for (auto& [id, d] : st.active) {
    seqs.push_back(d.seq);
    ids.push_back(id);
  }
  auto outs = st.engine->decode_step(seqs);
  ++st.steps;
  for (size_t i = 0; i < outs.size() && i < ids.size(); ++i) {
    auto it = st.active.find(ids[i]);
    token_batch b;
    b.id = ids[i];
    if (outs[i].status != engine::engine_status::ok) {
      b.finished = true;
      b.error = "decode step failed";
    } else {
      b.tokens.push_back(outs[i].token.id);
      b.finished = outs[i].finished;
    }
    b.kv_bytes = std::exchange(it->second.kv_bytes, 0);
    auto sink = it->second.sink;
    if (b.finished) {
      // Store the blocks before the client hears of the end, so its next turn hits them.
      release(self, it->second.seq);
      st.active.erase(it);
    }
    caf::send_as(caf::actor_cast<caf::actor>(self), sink, tokens_atom::value, std::move(b));
  }
  report(self);
  self->send(self, step_atom::value);
}

rank_actor::behavior_type rank_behavior(rank_pointer self, rank_config cfg) {
  self->state.cfg = cfg;
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& active = self->state.active;
    for (auto it = active.begin(); it != active.end();)
      if (it->second.sink.address() == dm.source) {
        log().info("rank={} request {} went away; dropping its sequence", self->state.cfg.rank, it->first);
        drop(self, it++);
      } else
        ++it;
  });
  if (!cfg.engine.model_dir.empty()) {
    engine::rank_engine::config ec;
    ec.threads = cfg.engine.threads;
    ec.kv_blocks = cfg.engine.kv_blocks;
    auto loaded = engine::rank_engine::load(cfg.engine.model_dir, ec);
    if (!loaded.engine) {
      log().error("rank={} cannot load model {}: {}", cfg.rank, cfg.engine.model_dir, loaded.error);
      // Fails like a crashed rank; the behavior below never runs.
      self->quit(make_error(errc::rank_failed, "cannot load model: " + loaded.error));
    } else
      self->state.engine = std::move(loaded.engine);
    if (auto& m = cfg.engine.metrics; m && self->state.engine) {
      std::vector<std::string> labels{cfg.engine.instance, std::to_string(cfg.rank)};
      auto& st = self->state;
      st.pool_used = &m->add_gauge("deepinfer_rank_kv_blocks_used", "KV pool blocks in use.",
                                   {"instance", "rank"}).with(labels);
      m->add_gauge("deepinfer_rank_kv_blocks_total", "KV pool blocks.", {"instance", "rank"})
        .with(labels)
        .set(static_cast<double>(st.engine->pool().geometry().blocks));
      st.active_gauge = &m->add_gauge("deepinfer_rank_active_sequences",
                                      "Sequences in the rank's decode batch.", {"instance", "rank"})
                           .with(labels);
      report(self);
    }
  }
  return {
    [=](caf::ping_atom) -> rank_status {
      auto& s = self->state;
      return {s.cfg.rank, s.cfg.ep_size, s.cfg.generation, s.steps};
    },
    [=](fail_atom, std::string& reason) {
      log().warn("rank={} generation={} failing on purpose reason={}", self->state.cfg.rank,
                 self->state.cfg.generation, reason);
      self->quit(make_error(errc::rank_failed, std::move(reason)));
    },
    [=](echo_atom, byte_payload& payload) -> byte_payload {
      ++self->state.steps;
      return std::move(payload);
    },
    [=](sink_atom, const byte_payload& payload) -> uint64_t {
      ++self->state.steps;
      return payload.bytes.size();
    },
    [=](prefill_atom, prefill_job& job) -> caf::typed_response_promise<prefill_result> {
      auto promise = self->make_response_promise<prefill_result>();
      run_prefill(self, job, promise);
      return promise;
    },
    [=](decode_atom, kv_handoff& h, const sampling_spec& s, const caf::strong_actor_ptr& sink) {
      start_decode(self, h, s, sink);
    },
    [=](cancel_atom, uint64_t id) {
      auto& st = self->state;
      auto it = st.active.find(id);
      if (it != st.active.end()) {
        drop(self, it);
        return;
      }
      // Not here yet: its KV may still be on the way. Remember a bounded number of such ids.
      if (st.cancelled.size() >= 4096)
        st.cancelled.erase(st.cancelled.begin());
      st.cancelled.insert(id);
    },
    [=](step_atom) { decode_step(self); },
  };
}

} // namespace

rank_actor spawn_rank(caf::actor_system& sys, const rank_config& cfg) {
  // A rank with an engine computes for long stretches: on its own thread it never starves the
  // scheduler that runs the entrypoint's request actors.
  if (!cfg.engine.model_dir.empty())
    return sys.spawn<caf::detached>(rank_behavior, cfg);
  return sys.spawn(rank_behavior, cfg);
}

} // namespace deepinfer::actors
