#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include "actors/http/api_keys.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/http/router.hpp"
#include "actors/interfaces.hpp"
#include "actors/node/serving_config.hpp"

namespace deepinfer::kv {
class prefix_cache;
}

namespace deepinfer::actors {

class cluster_snapshot;
class structured_output;

/// The serving entrypoint: routes POST /v1/chat/completions, /v1/responses and /v1/messages
/// through parse -> render -> tokenize -> prefill router -> prefill rank -> (KV transport) ->
/// decode rank -> stream parser -> encoder, one request actor per request. The prefill and
/// decode instances are whatever the membership view shows running, in this process or not.
class entrypoint {
public:
  /// Loads the tokenizer and builds the special-token table; nullopt + `error` on failure.
  /// `cluster` is this node's membership view; `cache` (may be null) answers CHECK.
  static std::unique_ptr<entrypoint> create(caf::actor_system& sys, const serving_config& cfg,
                                            std::shared_ptr<cluster_snapshot> cluster,
                                            std::shared_ptr<kv::prefix_cache> cache,
                                            std::shared_ptr<http::metrics_registry> metrics,
                                            std::string* error);
  ~entrypoint();

  /// Adds the three API routes and the token-counting ones (`/v1/messages/count_tokens`,
  /// `/tokenize`, `/detokenize`).
  void add_routes(http::router& routes);
  /// The compiler that enforces `response_format` / `text.format` (node_runtime sets the
  /// process's, shared with its ranks); without one such requests get a 400.
  /// The process's structured-output compiler and its actor (the fallback when the cluster has
  /// no `so` node).
  void set_structured_output(std::shared_ptr<structured_output> so, so_compiler_actor compiler);
  /// The keys requests need (none when null or when it requires none).
  void set_api_keys(std::shared_ptr<const http::api_keys> keys);

  struct context;

private:
  explicit entrypoint(std::shared_ptr<context> ctx);
  std::shared_ptr<context> ctx_;
};

} // namespace deepinfer::actors
