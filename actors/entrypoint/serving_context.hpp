#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include <caf/actor_system.hpp>

#include "actors/control/cluster_snapshot.hpp"
#include "actors/entrypoint/vllm_metrics.hpp"
#include "actors/entrypoint/entrypoint.hpp"
#include "actors/entrypoint/response_store.hpp"
#include "actors/entrypoint/vision_router.hpp"
#include "actors/http/image_fetcher.hpp"
#include "actors/http/metrics_registry.hpp"
#include "balancers/cost_model.hpp"
#include "engine/model/model_config.hpp"
#include "recipe/render/special_table.hpp"
#include "recipe/tokenizer/tokenizer.hpp"
#include "actors/node/structured_output.hpp"

namespace deepinfer::actors {

class lowered_thread;

/// What every request actor shares (read-only after start, apart from the id counter).
struct entrypoint::context {
  caf::actor_system* sys = nullptr;
  serving_config cfg;
  std::shared_ptr<const recipe::tokenizer> tok;
  std::optional<recipe::special_table> specials;
  int32_t eos = 0;
  /// The model's vision encoder shape (config.json; disabled when it has none or the config
  /// cannot be read): how many placeholders an image takes.
  engine::vision_config vision;
  /// The model's sliding window (config.json): a hit without its snapshot replays the window
  /// before it, images there included.
  int64_t window = 128;
  /// Routes images to the vision ranks (null when the model has no vision encoder), and the
  /// encoder queue time it measures (round trip less the encode).
  std::shared_ptr<vision_router> vision_routes;
  http::metrics_registry::histogram* vision_queue = nullptr;
  /// Images not sent to a vision rank because the prefix-cache hit holds them.
  http::metrics_registry::counter* vision_skipped = nullptr;
  /// Parses request bodies of `cfg.background_body_bytes` or more at the vision priority (null
  /// when the model has no vision encoder, or the setting is 0).
  std::shared_ptr<lowered_thread> background;
  /// Fetches http(s) image URLs (null when the model has no vision encoder).
  std::shared_ptr<http::image_fetcher> fetcher;
  /// Image URL fetches by result (`ok` or the fetch error's kind), their time and bytes.
  http::metrics_registry::family<http::metrics_registry::counter>* image_fetches = nullptr;
  http::metrics_registry::histogram* image_fetch_seconds = nullptr;
  http::metrics_registry::counter* image_fetch_bytes = nullptr;
  /// What this node knows of the cluster: the running prefill and decode instances come from
  /// here, wherever they live (this process or other nodes).
  std::shared_ptr<cluster_snapshot> cluster;
  /// Set above every attempt id this entrypoint gives the balancers (random at start), so keys
  /// of several entrypoints never collide at the cluster's one balancer of each kind.
  uint64_t balancer_tag = 0;
  /// Prices a prefill (compute-quota, DESIGN §6.1).
  std::optional<deepinfer::balancers::cost_model> quota;
  /// CHECK of the prefix cache (metadata only); null without a KV root.
  std::shared_ptr<kv::prefix_cache> cache;
  /// The process's structured-output compiler (null: constrained requests are refused), and
  /// its actor: constraints compile on the `so` nodes the view shows (round robin), on this
  /// node's own compiler when there is none, never on a request actor's thread.
  std::shared_ptr<structured_output> so;
  so_compiler_actor so_compiler;
  std::atomic<uint64_t> so_next{0};
  /// Those compiles by where (so_node, local) and result (compiled, refused, unanswered).
  http::metrics_registry::family<http::metrics_registry::counter>* so_compiles = nullptr;
  /// Stored Responses of this entrypoint.
  std::shared_ptr<response_store> responses;
  /// The API keys requests need; null: none.
  std::shared_ptr<const http::api_keys> keys;
  std::atomic<uint64_t> next_id{1};
  /// Admission control of this entrypoint (shared by its request actors).
  std::shared_ptr<admission_control> admission;
  /// Request metrics (owned by `metrics`, which this keeps alive).
  std::shared_ptr<http::metrics_registry> metrics;
  http::metrics_registry::histogram* ttft = nullptr;
  /// Where answered requests' time went, by stage (request_timeline).
  http::metrics_registry::family<http::metrics_registry::histogram>* request_stages = nullptr;
  http::metrics_registry::histogram* itl = nullptr;
  http::metrics_registry::counter* prompt_tokens = nullptr;
  http::metrics_registry::counter* cached_tokens = nullptr;
  /// Prompt tokens a resubmitted attempt (its decode or prefill rank was lost) found in the
  /// prefix cache: its own prompt's blocks, stored when its KV reached the decode side (issue 17).
  http::metrics_registry::counter* resubmitted_cached_tokens = nullptr;
  http::metrics_registry::counter* generated_tokens = nullptr;
  http::metrics_registry::gauge* in_flight = nullptr;
  http::metrics_registry::family<http::metrics_registry::counter>* kv_transfers = nullptr;
  /// Prefix hits that came with their SWA snapshot (exact), by where it was: local / remote.
  http::metrics_registry::family<http::metrics_registry::counter>* snapshot_hits = nullptr;
  http::metrics_registry::family<http::metrics_registry::counter>* kv_transfer_bytes = nullptr;
  /// Requests a draining decode rank handed to another (issue 17), and the time from its offer
  /// to the new rank's first tokens (the pause the stream sees).
  http::metrics_registry::counter* handoffs = nullptr;
  http::metrics_registry::histogram* handoff_seconds = nullptr;
  /// Requests refused by admission control, by reason (queue_full, queue_timeout).
  http::metrics_registry::family<http::metrics_registry::counter>* admission_refused = nullptr;
  /// The same measures under vLLM's names (`vllm:*`, label model_name).
  vllm_metrics vllm;
};

} // namespace deepinfer::actors
