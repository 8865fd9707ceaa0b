#include "actors/instance/rank.hpp"

#include <chrono>
#include <span>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/errors.hpp"
#include "actors/logprobs.hpp"
#include "actors/node/detached_actors.hpp"
#include "actors/transport/kv_transport.hpp"
#include "actors/log.hpp"
#include "actors/instance/rank_prefill.hpp"
#include "actors/instance/rank_state.hpp"
#include "engine/cost_profile.hpp"
#include "engine/kv_codec.hpp"
#include "recipe/base/thread_name.hpp"

namespace deepinfer::actors {

void store_filled(rank_pointer self, decoding& d) {
  auto& st = self->state;
  auto& cache = st.cfg.engine.cache;
  if (!cache)
    return;
  auto tokens = st.engine->tokens(d.seq);
  d.length = static_cast<int64_t>(tokens.size());
  // The last token has no KV yet: the next decode step would have fed it.
  const auto full = tokens.empty() ? 0 : static_cast<int64_t>(tokens.size() - 1) / 128;
  if (full <= d.stored_blocks)
    return;
  // The export (a copy of the block's pool rows) is all that runs here; the writer thread does
  // the files. The bytes are the ones `store` wrote at the sequence's end before issue 17: a pool
  // row below the KV length never changes.
  d.stored_blocks = cache->store_async(
    tokens, d.stored_blocks, full, [&](int64_t i) { return st.engine->export_block(d.seq, i); }, d.salt, d.traffic,
    d.images);
  note_unstored(st, d, full);
}

void note_unstored(rank_state& st, const decoding& d, int64_t full) {
  // A refused block (full write queue): the loop must export from it when it frees the sequence.
  if (st.loop && d.stored_blocks < full)
    st.loop->note_stored(d.seq, d.stored_blocks);
}

void report(rank_pointer self) {
  auto& st = self->state;
  if (!st.pool_used || !st.engine)
    return;
  st.active_gauge->set(static_cast<double>(st.active.size()));
  st.queue_gauge->set(static_cast<double>(st.prefills.size()));
  if (st.loop && st.holds == 0) {
    // The loop's step may be changing the pool: its count after the last step.
    st.pool_used->set(static_cast<double>(st.loop->pool_blocks_used()));
    return;
  }
  auto& pool = st.engine->pool();
  st.pool_used->set(static_cast<double>(pool.geometry().blocks - pool.free_blocks()));
}

namespace {

/// Drops a decoding sequence (cancelled, or its client is gone), keeping its full blocks.
void drop(rank_pointer self, std::map<uint64_t, decoding>::iterator it) {
  auto& st = self->state;
  const auto id = it->first;
  release(self, it->second);
  st.active.erase(it);
  report(self);
  drain_forget(self, id);
}

void import_received(rank_pointer self, const kv_handoff& h, const std::vector<std::byte>& bytes,
                     const std::vector<parallel_sample>& starts, const engine::sampling_params& s,
                     const caf::actor& sink);

/// A handed-off sequence arrives: its KV is received now, then it joins the batch (once its
/// constraint is compiled here).
void start_decode(rank_pointer self, kv_handoff& h, const engine::sampling_params& s,
                  const caf::strong_actor_ptr& sink_ptr) {
  auto& st = self->state;
  auto sink = caf::actor_cast<caf::actor>(sink_ptr);
  auto* transport = kv_transport_of(h.transport);
  auto bytes = transport ? transport->receive(h)
                         : caf::expected<std::vector<std::byte>>{make_error(
                             errc::kv_transport_unknown,
                             std::string{"this node has no KV transport "} + to_string(h.transport))};
  if (!sink)
    return;
  // The KV is received while the loop steps; the import needs the engine.
  auto held = hold_engine(self);
  // One sequence, or one per parallel sample, each with its own seed and first token (the same
  // KV imported once per sample).
  std::vector<parallel_sample> starts = h.samples;
  if (starts.empty())
    starts.push_back({h.id, s.seed, -1, false, {}});
  auto fail = [self, sink](uint64_t id, caf::error e) {
    token_batch failed;
    failed.id = id;
    failed.finished = true;
    failed.error = std::move(e);
    caf::send_as(caf::actor_cast<caf::actor>(self), sink, tokens_atom::value, std::move(failed));
  };
  if (!bytes || !st.engine) {
    auto e = !st.engine ? make_error(errc::engine_missing, "rank has no engine") : std::move(bytes.error());
    for (const auto& x : starts)
      if (st.cancelled.erase(x.id) == 0)
        fail(x.id, e);
    return;
  }
  // A constraint compiled elsewhere (an `so` node) or evicted here compiles on the node's
  // compiler actor first, with the KV at hand: the rank goes on stepping meanwhile.
  if (needs_compile(self, s.constraint)) {
    h.packed.clear();
    h.packed.shrink_to_fit();
    auto parked = std::make_shared<std::pair<kv_handoff, std::vector<std::byte>>>(std::move(h), std::move(*bytes));
    compile_then(self, s.constraint, [=](caf::error err) {
      auto held = hold_engine(self);
      if (err) {
        for (const auto& x : starts)
          if (self->state.cancelled.erase(x.id) == 0)
            fail(x.id, err);
        return;
      }
      import_received(self, parked->first, parked->second, starts, s, sink);
    });
    return;
  }
  import_received(self, h, *bytes, starts, s, sink);
}

void import_received(rank_pointer self, const kv_handoff& h, const std::vector<std::byte>& bytes,
                     const std::vector<parallel_sample>& starts, const engine::sampling_params& s,
                     const caf::actor& sink) {
  auto& st = self->state;
  auto fail = [&](uint64_t id, caf::error e) {
    token_batch failed;
    failed.id = id;
    failed.finished = true;
    failed.error = std::move(e);
    caf::send_as(caf::actor_cast<caf::actor>(self), sink, tokens_atom::value, std::move(failed));
  };
  std::span<const std::byte> span{bytes.data(), bytes.size()};
  bool first = true;
  for (const auto& x : starts) {
    if (st.cancelled.erase(x.id) > 0)
      continue; // cancelled while its KV was on the way
    auto sampling = s;
    sampling.seed = x.seed;
    engine::sequence_id seq{st.next_seq++};
    std::string err;
    if (auto status = st.engine->import_sequence(seq, span, sampling, &err, x.first_token);
        status != engine::engine_status::ok) {
      fail(x.id, make_error(status == engine::engine_status::invalid_request ? errc::engine_invalid_request
                                                                             : errc::engine_import_failed,
                            "cannot import the sequence: " + err));
      continue;
    }
    // A request actor that goes away (client gone, entrypoint node dead) takes its sequence along.
    self->monitor(sink);
    // The bytes that arrived count once, on the first sequence's first batch.
    auto& d = st.active[x.id] = decoding{seq, sink, first ? span.size() : 0, h.cache_salt, h.traffic,
                                         s.logprobs || s.top_logprobs > 0 ? s.top_logprobs : -1, h.images,
                                         sampling, false};
    // Its prompt's blocks now (issue 17), not when it ends: a request rerouted after this rank
    // dies hits its own prompt. Parallel samples share the prompt: the first queues its blocks,
    // the others find them queued. A sequence handed off here brings its output blocks too
    // (those its old rank stored are found stored).
    store_filled(self, d);
    first = false;
  }
  report(self);
  ensure_stepping(self);
  // KV that was on its way when the drain's grace ended (placed before the routers heard).
  for (const auto& x : starts)
    if (st.active.count(x.id) > 0)
      offer_if_handing_off(self, x.id);
}

rank_actor::behavior_type rank_behavior(rank_pointer self, rank_config cfg) {
  self->state.cfg = cfg;
  // A rank with an engine is detached: this runs on its own thread, named for `top -H` and perf
  // ("prefill.2/r0": the instance's role and number, the rank).
  if (!cfg.engine.model_dir.empty()) {
    const auto& instance = cfg.engine.instance;
    const auto slash = instance.rfind('/');
    name_this_thread((slash == std::string::npos ? instance : instance.substr(slash + 1)) + "/r" +
                     std::to_string(cfg.rank));
  }
  self->set_down_handler([=](caf::down_msg& dm) {
    auto held = hold_engine(self);
    drop_prefills_of(self, dm.source);
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
    ec.isa = cfg.engine.cpu_isa;
    ec.backend = cfg.engine.backend;
    ec.device_slot = static_cast<int>(cfg.rank);
    ec.constraints = cfg.engine.constraints;
    // Without a draft head the engine drafts nothing and the rank decodes plainly.
    ec.speculative = cfg.engine.speculative.value_or(engine::speculative_mode::variable);
    auto load = [&] { return engine::rank_engine::load(cfg.engine.model_dir, ec); };
    engine::rank_engine::load_result loaded;
    if (cfg.engine.encodes_images) {
      // On the encoder thread, at its priority: the engine's threads inherit it.
      self->state.encoder = std::make_unique<lowered_thread>(cfg.engine.priority, "vision.encode");
      if (const auto& refused = self->state.encoder->priority_error())
        log().warn("rank={} the encoder keeps the process's CPU priority: {}", cfg.rank, *refused);
      loaded = self->state.encoder->run_and_wait(load);
    } else {
      loaded = load();
    }
    if (!loaded.engine) {
      log().error("rank={} cannot load model {}: {}", cfg.rank, cfg.engine.model_dir, loaded.error);
      // Fails like a crashed rank; the behavior below never runs.
      self->quit(make_error(errc::rank_failed, "cannot load model: " + loaded.error));
    } else {
      self->state.engine = std::move(loaded.engine);
      if (self->state.engine->drafting()) {
        auto planner = std::make_unique<engine::spec_planner>(ec.speculative);
        if (ec.speculative == engine::speculative_mode::variable) {
          // The verify cost curve kept with the model (measured first when it has none for this
          // engine setup; the node measured it before any actor ran when it serves or prefills).
          engine::cost_profile::config setup{ec.threads, ec.isa};
          setup.backend = ec.backend;
          auto fit = engine::cost_profile::ensure(cfg.engine.model_dir, setup);
          if (fit.fit && !fit.fit->verify_steps.empty())
            planner->set_verify_costs(fit.fit->verify_steps);
          else
            log().warn("rank={} no verify cost curve ({}): the planner prices drafts on its own steps", cfg.rank,
                       fit.fit ? "none measured" : fit.error);
        }
        self->state.planner = std::move(planner);
      }
      join_ep(self);
    }
    // The staging buffers a hit's blocks are read into (shared by the process's prefill ranks).
    if (auto& cache = cfg.engine.cache; cache && cfg.engine.reads_hits && self->state.engine)
      cache->reserve(kv::prefix_cache::spare_limit,
                     engine::kv_codec::block_bytes(128, self->state.engine->pool().geometry().floats_per_token));
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
      st.queue_gauge = &m->add_gauge("deepinfer_prefill_rank_queue",
                                     "Prefill jobs on the rank: fetching blocks, waiting for pool "
                                     "room or being prefilled.", {"instance", "rank"})
                          .with(labels);
      if (cfg.engine.reads_hits) // prefill ranks
        st.prefilled_tokens = &m->add_counter("deepinfer_rank_prefilled_tokens_total",
                                              "Prompt tokens the prefill rank computed (a prefix hit's cached "
                                              "tokens not counted).", {"instance", "rank"})
                                 .with(labels);
      if (st.engine->has_vision()) {
        st.images_encoded = &m->add_counter("deepinfer_vision_images_encoded_total",
                                            "Images the rank's vision encoder turned into placeholder embeddings.",
                                            {"instance", "rank"})
                               .with(labels);
        st.encode_seconds = &m->add_histogram("deepinfer_vision_encode_seconds", "Time to encode one image.",
                                              {"instance", "rank"}, http::metrics_registry::default_latency_buckets())
                               .with(labels);
      }
      if (!cfg.engine.reads_hits) // decode ranks only (prefill ranks read hits)
        st.idle_gauge = &m->add_gauge("deepinfer_decode_idle_fraction",
                                    "Share of decode time the compute threads waited between steps of a running "
                                    "batch: for the rank thread's post-processing (synchronous scheduling), or "
                                    "for its hold on the engine (asynchronous).",
                                    {"instance", "rank"})
                         .with(labels);
      if (st.planner) {
        // vLLM's names (existing dashboards work), labelled like the rank's other series.
        st.spec_drafts = &m->add_counter("vllm:spec_decode_num_drafts_total",
                                         "Decode steps of a request that verified at least one draft.",
                                         {"instance", "rank"}).with(labels);
        st.spec_draft_tokens = &m->add_counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens verified.",
                                               {"instance", "rank"}).with(labels);
        st.spec_accepted = &m->add_counter("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted.",
                                           {"instance", "rank"}).with(labels);
        auto& per_pos = m->add_counter("vllm:spec_decode_num_accepted_tokens_per_pos_total",
                                       "Draft tokens accepted, by draft position (0: the first draft).",
                                       {"instance", "rank", "position"});
        for (int j = 0; j < engine::max_draft_positions; ++j)
          st.spec_accepted_at[static_cast<std::size_t>(j)] =
            &per_pos.with({cfg.engine.instance, std::to_string(cfg.rank), std::to_string(j)});
      }
      report(self);
    }
    // Last: the loop takes the planner, and its first steps publish to the gauges above.
    start_decode_loop(self);
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
    [=](encode_atom, vision_job& job) -> caf::typed_response_promise<vision_result> {
      return start_encode(self, job);
    },
    [=](encode_atom, uint64_t key, vision_result& r) { finish_encode(self, key, r); },
    [=](prefill_atom, prefill_job& job) -> caf::typed_response_promise<prefill_result> {
      auto held = hold_engine(self);
      auto promise = self->make_response_promise<prefill_result>();
      if (!needs_compile(self, job.sampling.constraint)) {
        start_prefill(self, job, promise);
        return promise;
      }
      // Its constraint compiles on the node's compiler actor first; jobs behind it go on.
      auto parked = std::make_shared<prefill_job>(std::move(job));
      compile_then(self, parked->sampling.constraint, [=](caf::error err) mutable {
        auto held = hold_engine(self);
        if (self->state.cancelled.erase(parked->id) > 0)
          err = make_error(errc::request_cancelled, "cancelled while its constraint compiled");
        if (err) {
          prefill_result out;
          out.id = parked->id;
          out.error = std::move(err);
          promise.deliver(std::move(out));
          return;
        }
        start_prefill(self, *parked, promise);
      });
      return promise;
    },
    [=](decode_atom, kv_handoff& h, const engine::sampling_params& s, const caf::strong_actor_ptr& sink) {
      start_decode(self, h, s, sink);
    },
    [=](cancel_atom, uint64_t id) {
      auto held = hold_engine(self);
      auto& st = self->state;
      if (cancel_prefill(self, id, "cancelled"))
        return;
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
    [=](step_atom) { on_step(self); },
    [=](chunk_atom) {
      auto held = hold_engine(self);
      prefill_chunk(self);
    },
    [=](planned_atom, uint64_t id) {
      auto held = hold_engine(self);
      on_hit_planned(self, id);
    },
    [=](loaded_atom, uint64_t id) {
      auto held = hold_engine(self);
      on_blocks_loaded(self, id);
    },
    [=](ep_wake_atom, int64_t step) { on_ep_wake(self, step); },
    [=](ep_serve_atom, uint64_t chain) { on_ep_serve(self, chain); },
    [=](drain_atom, int64_t grace_ms) -> caf::typed_response_promise<uint64_t> {
      auto promise = self->make_response_promise<uint64_t>();
      auto held = hold_engine(self);
      begin_drain(self, std::chrono::milliseconds{grace_ms}, promise);
      return promise;
    },
    [=](move_atom, uint64_t id, const rank_grant& to) {
      auto held = hold_engine(self);
      on_move(self, id, to);
    },
    [=](drain_atom) {
      auto held = hold_engine(self);
      on_drain_timer(self);
    },
  };
}

} // namespace

rank_actor spawn_rank(caf::actor_system& sys, const rank_config& cfg) {
  // A rank with an engine computes for long stretches: on its own thread it never starves the
  // scheduler that runs the entrypoint's request actors.
  if (!cfg.engine.model_dir.empty()) {
    auto rank = sys.spawn<caf::detached>(rank_behavior, cfg);
    if (cfg.engine.detached)
      cfg.engine.detached->add(rank.address());
    return rank;
  }
  return sys.spawn(rank_behavior, cfg);
}

} // namespace deepinfer::actors
