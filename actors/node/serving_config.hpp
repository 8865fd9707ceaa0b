#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/entrypoint/admission_control.hpp"
#include "actors/http/image_fetcher.hpp"
#include "actors/transport/kv_transport_choice.hpp"
#include "balancers/cost_model.hpp"
#include "balancers/vision_balancer.hpp"
#include "engine/backends/backend_kind.hpp"
#include "engine/decoder_mode.hpp"
#include "engine/speculative_mode.hpp"
#include "engine/thread_priority.hpp"
#include "engine/kernels/isa.hpp"
#include "recipe/json_parse.hpp"
#include "recipe/vision/image_decode.hpp"

namespace deepinfer::actors {

/// The limits of one request at the entrypoint (issue 14).
struct request_limits {
  /// JSON limits every request body (and the JSON inside it) is parsed under.
  recipe::json_limits json;
  /// Longest time a request may go without progress (admitted, prefilled, a next token); then
  /// it ends with the API's error (a stream: its error event; otherwise a 504 with what was
  /// generated). The wait for admission has its own limit (admission queue_timeout).
  std::chrono::milliseconds stall_timeout{60000};
  /// Total time a request may take from arrival, ended the same way; 0: none (max_tokens and the
  /// stall timeout bound it).
  std::chrono::milliseconds deadline{0};
  /// Output tokens of a request that names no limit (max_tokens, max_completion_tokens,
  /// max_output_tokens; legacy completions keep OpenAI's 16), lowered to what the context leaves
  /// after the prompt. Finite because a decode rank reserves KV for prompt + max_tokens of every
  /// request it takes.
  int32_t default_max_tokens = 256;
  /// Legacy Completions: most prompts one request's `prompt` list may hold (each is served as a
  /// request of its own, the answers merged in one).
  int32_t max_batch_prompts = 64;
  /// Legacy Completions' `echo` with `logprobs` (and vLLM's `prompt_logprobs`) scores every
  /// prompt token: the prefill runs the
  /// decoder and the lm_head over the whole prompt, cold (~0.8 ms a token for the tiny model on
  /// one Zen 4 core, most of it the lm_head; the prefill rank does nothing else meanwhile).
  /// Longest prompt that may ask for it.
  int32_t max_prompt_logprobs_tokens = 4096;
  /// API keys clients must send (`Authorization: Bearer KEY` or `x-api-key: KEY`); empty: no
  /// authentication. Each key is also its tenant's prefix-cache namespace.
  std::vector<std::string> api_keys;
  /// Stored Responses (`store`, `previous_response_id`, GET/DELETE /v1/responses/{id}): how long
  /// one is kept and how many bytes all of them may take on this entrypoint; 0 bytes: none kept.
  std::chrono::seconds responses_ttl{3600};
  std::size_t responses_max_bytes = std::size_t{256} << 20;
  /// A non-streamed answer carries a `Server-Timing` header: where its time went, stage by stage
  /// (request_timeline.hpp). Off: no header (the stage histogram is kept either way).
  bool server_timing = true;
};

/// What the serving path needs besides the actors: model, tokenizer, limits.
struct serving_config {
  /// Model directory every engine rank loads (config.json + model.safetensors).
  std::string model_dir;
  /// Root of the KV block store (prefix cache); empty: no prefix cache.
  std::string kv_root;
  /// The tokenizer.json of the model's template.
  std::string tokenizer_path;
  /// `dsv41` or `dsv32`.
  std::string template_version = "dsv41";
  /// The model id clients must name.
  std::string model_name;
  /// Prompt + max_tokens must fit this many tokens.
  int64_t context_limit = 40960;
  /// Engine threads and KV blocks per rank.
  int threads_per_rank = 1;
  int64_t kv_blocks_per_rank = 512;
  /// KV blocks of a decode rank when they differ from a prefill rank's (0: the same); the decode
  /// balancer sizes each rank by its own pool.
  int64_t decode_kv_blocks_per_rank = 0;
  /// What one request may ask for and how long it may take (manifest `[requests]`).
  request_limits requests;
  /// Admission control (queues and limits per role, queue timeout; manifest `[admission]`).
  admission_control::config admission;
  /// The KV store's lifecycle (`[kv]`, DESIGN §4.1): TTL per traffic class, the GC watermarks
  /// as fractions of the disk budget (0: the filesystem's size), fsync, SWA memory. A node with
  /// the kvstore role runs the GC every `kv_gc_interval`.
  std::chrono::milliseconds kv_ttl_agent{std::chrono::hours{72}};
  std::chrono::milliseconds kv_ttl_chatbot{std::chrono::hours{168}};
  uint64_t kv_disk_budget_bytes = 0;
  double kv_gc_low_watermark = 0.80;
  double kv_gc_high_watermark = 0.90;
  bool kv_fsync = false;
  uint64_t swa_memory_bytes = uint64_t{1} << 30;
  /// Bytes of exported blocks the writer thread may hold (`[kv] write_queue_mib`).
  uint64_t kv_write_queue_bytes = uint64_t{256} << 20;
  std::chrono::milliseconds kv_gc_interval{10000};
  /// Structured output (`[so]`): compiled constraints kept, in bytes of their automata, and
  /// how long one compile may take before the request gets a 400.
  std::size_t so_cache_bytes = std::size_t{256} << 20;
  std::chrono::milliseconds so_compile_timeout{2000};
  /// `[so] json_whitespace`: the most whitespace bytes in a row between two tokens of a JSON
  /// output (nullopt: any number). Enough for pretty-printed JSON (a newline and an indent of
  /// up to 15), and a sampled model cannot spend its output on whitespace. Each byte allowed
  /// is a lexer state per gap: 16 keeps MaskBench's mask p99 under 400 us (bench/RESULTS.md).
  std::optional<uint32_t> so_json_whitespace = 16;
  /// Image inputs (`[vision]`, issue 21): pixels per image and images per request, at most.
  recipe::image_limits vision;
  /// How the entrypoint fetches http(s) image URLs (`[vision]` fetch_timeout_s,
  /// fetch_max_redirects, fetch_private_addresses; its size limit is `vision.max_bytes`).
  http::image_fetcher::config image_fetch;
  /// How the entrypoint spreads images over the vision ranks (`[vision] balancer`).
  balancers::vision_policy vision_balancer = balancers::vision_policy::patches;
  /// The CPU priority of the vision ranks' encoder threads (`[vision] scheduling`, `nice`):
  /// where they share cores with prefill and decode ranks (the embedded default, a small
  /// cluster), an encode yields the CPU to text requests, whose TTFT would otherwise grow with
  /// the image load. SCHED_IDLE (the default) yields at once and entirely: a waking prefill or
  /// decode thread takes the core; a nice thread keeps a share and a slice. On vision machines
  /// of their own it changes nothing.
  engine::thread_priority vision_priority{true, 10};
  /// Request bodies of this many bytes or more are parsed on a thread of the entrypoint at
  /// `vision_priority` instead of a CAF worker (`[vision] background_body_bytes`, 0: never): in
  /// practice inline images, whose parse (~6 ms per MiB) would otherwise be taken from the text
  /// requests sharing the cores. A text prompt that fits the context is far smaller.
  std::size_t background_body_bytes = std::size_t{1} << 20;
  /// Limit for one prefill round trip (a dead rank never answers: CAF 0.17 pitfall P7).
  std::chrono::milliseconds prefill_timeout{60000};
  /// How long a request waits for a running prefill and decode instance (starting, restarting
  /// after a failure, or every rank full) before it fails with 503.
  std::chrono::milliseconds instance_wait{30000};
  /// Lifetime of SWA snapshots and of their directory entries (DESIGN §4.2: about 180 s).
  std::chrono::milliseconds snapshot_ttl{180000};
  /// How prefills run the decoder (rank_engine_config::decoder_mode): bounded, the seeds'
  /// production mode, by default; exact for measurement.
  engine::decoder_mode decoder_mode = engine::decoder_mode::bounded;
  /// Speculative decoding on the node's decode ranks (`--speculative`; rank_engine_config::
  /// speculative): nullopt is variable when the model has a draft head, else off.
  std::optional<engine::speculative_mode> speculative;
  /// Asynchronous scheduling on the node's decode ranks (`--async-scheduling on|off`;
  /// rank_engine_config::async_scheduling).
  bool async_scheduling = true;
  /// CPU kernels of this node's ranks (nullopt: the best the CPU runs); every ISA gives the same
  /// bits, so nodes of a cluster may differ.
  std::optional<engine::kernels::cpu_isa> cpu_isa;
  /// Where this node's ranks compute (`nodes[].backend`, `--backend cpu|cuda`): launcher/ checks
  /// that a CUDA node has a usable device before it starts.
  engine::backend_kind backend = engine::backend_kind::cpu;
  /// How KV crosses processes (manifest `kv_transport`): auto uses RDMA between nodes that both
  /// have it, caf_message never does, rdma refuses to start without a working RDMA listener.
  kv_transport_mode kv_transport = kv_transport_mode::automatic;
  /// The RDMA listener's port on the node's host (manifest `rdma_port`); 0 picks a free one.
  uint16_t rdma_port = 0;
  /// Time budget of one chunked-prefill step on a prefill rank (rank_engine_config::
  /// prefill_step_ns): how long a new prompt, a cancel or a ping waits behind a long prompt.
  std::chrono::microseconds prefill_step{100000};
  /// The fitted prefill cost model (DESIGN §5.3, §6.1) of this node's engine setup (model,
  /// cpu_isa, threads_per_rank): the node's prefill ranks chunk with it and its entrypoint
  /// prices prefills (compute-quota) with it. nullopt: node_runtime takes it from
  /// MODEL_DIR/cost_model.json at start, measuring it first when the file has no fit for this
  /// setup (engine::cost_profile::ensure; about a second for the tiny model).
  std::optional<deepinfer::balancers::cost_model> prefill_cost;
};

} // namespace deepinfer::actors
