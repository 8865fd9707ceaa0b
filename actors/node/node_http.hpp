#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "actors/control/cluster_snapshot.hpp"
#include "actors/node/node_runtime.hpp"

namespace deepinfer::actors {

namespace http {
class api_keys;
class router;
class metrics_registry;
}

/// The HTTP face of a node with the entrypoint role: /health, /v1/models, /metrics (membership,
/// instance states, HTTP counters and latencies), and an error in OpenAI's shape for everything
/// else. Reads cluster state only from the node's snapshot, so no request waits on an actor.
class node_http {
public:
  /// `extra_routes` adds more routes (the serving APIs) before the server starts; `metrics` is
  /// the registry /metrics renders (a fresh one when null), shared with the node's actors.
  /// With `keys` requiring keys, /v1/models needs one, and /metrics too with `protect_metrics`.
  node_http(http_endpoint cfg, std::shared_ptr<cluster_snapshot> snapshot,
            std::function<void(http::router&)> extra_routes = {},
            std::shared_ptr<http::metrics_registry> metrics = nullptr,
            std::shared_ptr<const http::api_keys> keys = nullptr);
  ~node_http();
  node_http(const node_http&) = delete;
  node_http& operator=(const node_http&) = delete;

  /// Binds and starts serving; returns an error message or nullopt.
  std::optional<std::string> start();
  /// Stops accepting, answers in-flight requests within `deadline`, then closes.
  void stop(std::chrono::milliseconds deadline);
  /// The bound port (useful when configured with port 0).
  uint16_t port() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace deepinfer::actors
