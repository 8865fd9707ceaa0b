#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"
#include "balancers/cost_model.hpp"
#include "engine/backends/backend_kind.hpp"
#include "engine/decoder_mode.hpp"
#include "engine/kernels/isa.hpp"
#include "engine/speculative_mode.hpp"
#include "engine/thread_priority.hpp"

namespace deepinfer::kv {
class prefix_cache;
}

namespace deepinfer::engine {
class token_constraint_factory;
}

namespace deepinfer::actors {

namespace http {
class metrics_registry;
}

class ep_generation;
class detached_actors;

/// The engine a rank owns; an empty `model_dir` makes an idle rank (no engine).
struct rank_engine_config {
  std::string model_dir;
  /// Threads of the rank's CPU backend (counting the rank's own).
  int threads = 1;
  /// Tokens per block of the rank's KV pool (the engine's and the prefix cache's block).
  static constexpr int64_t tokens_per_block = 128;
  /// Blocks of `tokens_per_block` tokens in the rank's KV pool.
  int64_t kv_blocks = 256;
  /// The process's prefix cache (null: no cache). Prefill reads hits, decode stores blocks.
  std::shared_ptr<kv::prefix_cache> cache;
  /// Makes the token masks of structured-output requests (the process's compiler; null: such
  /// requests fail at the rank).
  std::shared_ptr<engine::token_constraint_factory> constraints;
  /// The node's compiler actor, which compiles a request's constraint into `constraints` before
  /// the request enters the engine when it is not there yet (a constraint compiled on an `so`
  /// node, or evicted): never on the rank's thread. Null: the engine compiles it itself.
  so_compiler_actor so_compiler;
  /// How long a rank waits for that compile (the compile timeout and a margin).
  std::chrono::milliseconds so_compile_wait{5000};
  /// A prefill rank: it reads hits, so at load it reserves the process's host staging buffers
  /// for them (decode ranks never read a hit).
  bool reads_hits = false;
  /// Where the rank reports pool use and batch size (null: nowhere), labelled by `instance`.
  std::shared_ptr<http::metrics_registry> metrics;
  std::string instance;
  /// How prefills run the decoder (DESIGN §5.2): bounded (default, the seeds' production mode)
  /// runs it over the prompt's last 128 tokens only; a hit with its SWA snapshot still changes no
  /// bit, and a resubmitted request anchors the replay at its original prompt, so a reroute
  /// changes no token either. exact (for measurement) runs it over the last ring + 128 x D tokens
  /// (646 on the tiny model), so its windows equal a full run's.
  engine::decoder_mode decoder_mode = engine::decoder_mode::bounded;
  /// A vision rank: it loads its engine and encodes images on an encoder thread of its own
  /// (actors/node/lowered_thread.hpp) that runs at `priority`, so that vision ranks yield
  /// the CPU to the text path where they share cores (`[vision] scheduling`, `nice`).
  bool encodes_images = false;
  engine::thread_priority priority;
  /// CPU kernels (nullopt: the best the CPU runs; every ISA gives the same bits).
  std::optional<engine::kernels::cpu_isa> cpu_isa;
  /// Where the engine's matrix products run (`nodes[].backend`, `--backend`): on a CUDA node the
  /// rank takes device (rank index mod device count), one rank per GPU.
  engine::backend_kind backend = engine::backend_kind::cpu;
  /// Speculative decoding on a decode rank (DESIGN §5.3): off, fixed (verify every draft) or
  /// variable (the prefix per request that maximises expected tokens per second); nullopt:
  /// variable when the model has a draft head. Greedy output is the same in every mode.
  std::optional<engine::speculative_mode> speculative;
  /// Asynchronous scheduling on a decode rank (issue 18, engine::decode_loop): a compute thread
  /// steps the batch back to back while the rank's thread streams the step before; off, the
  /// rank's thread steps, then streams. The output is the same token for token.
  bool async_scheduling = false;
  /// Chunked prefill (DESIGN §5.3, engine::prefill_scheduler): the time budget of one prefill
  /// step, ns. Between steps the rank takes new jobs, cancels and pings, so a step bounds how
  /// long they wait. Chunk sizes come from `prefill_cost`. 100 ms: on
  /// the tiny CPU model, 50 ms chunks (~330 tokens) made a 12K-token prompt ~20 % slower than
  /// one chunk, 100 ms ones ~5 %; a short prompt behind it then waits ~180 ms instead of ~1.9 s.
  double prefill_step_ns = 100e6;
  /// The fitted prefill cost model of this engine setup (model, ISA, threads) that chunks its
  /// prefills; node_runtime passes the one serving_config carries. nullopt: the rank takes it
  /// from MODEL_DIR/cost_model.json at its first prefill, measuring it first when the file has
  /// no fit for its setup (engine::cost_profile::ensure).
  std::optional<deepinfer::balancers::cost_model> prefill_cost;
  /// A prompt predicted to need more than this many steps is long: shorter prompts behind it
  /// lead the next step, unless they took most of the last one
  /// (prefill_scheduler::config::long_prompt_steps; 0: plain FIFO). 1, not 4: with 4, a long
  /// prompt in its last 4 steps held every short one behind it for up to 4 steps (bench/
  /// RESULTS.md, "short prompts lead the next step").
  double prefill_long_steps = 1;
  /// Where the node tracks its detached actors (a rank with an engine is one), so its stop
  /// waits until CAF lets go of them (null: not tracked).
  std::shared_ptr<detached_actors> detached;
};

/// Identity of one rank within one generation of its instance.
struct rank_config {
  rank_config() = default;
  rank_config(uint32_t r, uint32_t ep, uint32_t gen, rank_engine_config e = {})
    : rank(r), ep_size(ep), generation(gen), engine(std::move(e)) {}

  uint32_t rank = 0;
  uint32_t ep_size = 1;
  uint32_t generation = 0;
  rank_engine_config engine;
  /// The generation's expert-parallel group this rank's engine joins (null: it computes every
  /// expert itself; an instance of one rank).
  std::shared_ptr<ep_generation> ep;
};

/// Spawns a rank actor. With a model it owns a `rank_engine`: it prefills prompts in budgeted
/// chunks (reading their cached blocks on an I/O thread meanwhile) and hands them over, and it
/// decodes every sequence it holds in one continuous batch (a step loop driven
/// by self-messages). Without a model it is an idle worker. Either way it answers pings, echoes
/// payloads, and fails on request (fault injection) exactly as a crashed rank would: it
/// terminates with `errc::rank_failed`, which its supervisor observes through its monitor.
rank_actor spawn_rank(caf::actor_system& sys, const rank_config& cfg);

} // namespace deepinfer::actors
