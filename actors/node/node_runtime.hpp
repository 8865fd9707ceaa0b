#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/balancer/balancer_actors.hpp"
#include "actors/names.hpp"
#include "actors/control/cluster_snapshot.hpp"
#include "actors/control/controller.hpp"
#include "actors/node/serving_config.hpp"
#include "actors/node/system_settings.hpp"
#include "engine/ep/ep_rank.hpp"

namespace caf {
class actor_system;
}

namespace deepinfer::actors {

/// One prefill / decode / vision instance hosted by a node.
struct instance_spec {
  node_role role = node_role::prefill;
  uint32_t ranks = 1;
  /// Its EP group when it has several ranks (the manifest's `[balancer.<role>]` EP keys).
  engine::ep_settings ep = role == node_role::prefill ? engine::ep_settings::prefill()
                                                      : engine::ep_settings::decode();
  /// Decode: how long a drain notice lets it decode on before it hands its requests to other
  /// decode instances (`[autoscaler] decode_grace_seconds`).
  std::chrono::milliseconds drain_grace{60000};
  /// Its number among the node's instances of this role: the first is `node/role`, the next
  /// ones `node/role.2`, `node/role.3`... (several independent groups on one node).
  uint32_t ordinal = 1;
};

/// The HTTP entrypoint of a node.
struct http_endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  ///< 0 picks a free port (tests)
  std::size_t body_limit_bytes = 8u << 20;
  unsigned threads = 1;
  /// Connection cap and timeouts, Host allow-list and CORS origins (http::http_server::config).
  std::size_t max_connections = 4096;
  std::chrono::milliseconds idle_timeout{30000};
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{30000};
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> cors_origins;
  /// Model ids listed by /v1/models.
  std::vector<std::string> models;
  /// Prompt + max_tokens limit /v1/models reports as vLLM's `max_model_len` (0: not reported;
  /// a serving node sets it from its serving config's `context_limit`).
  int64_t max_model_len = 0;
  /// Operator endpoints (`POST /admin/fail-rank`, `GET /admin/instances`); off by default.
  bool admin = false;
  /// More API keys, one per line, read at start and again on `node_runtime::reload_api_keys`
  /// (SIGHUP); empty: none. Any file means keys are required, even while it lists none.
  std::string api_keys_file;
  /// /metrics needs an API key too (when the server has keys); /health never does.
  bool protect_metrics = false;
};

/// Everything one node process needs; built by launcher/ (or by an embedding service).
struct node_runtime_config {
  /// Name, host and port (0 = publish nothing: single-process use) and roles of this node.
  node_info self;
  /// When true this node runs the controller and publishes it on `self.port`.
  bool hosts_controller = false;
  std::string controller_host;
  uint16_t controller_port = 0;
  std::vector<instance_spec> instances;
  /// A ready-pool node (issue 17): the instances the controller's autoscaler may start here,
  /// one at a time (none of them runs until it is assigned). Empty: not a pool node.
  std::vector<instance_spec> pool_instances;
  std::optional<http_endpoint> http;
  /// Set to serve the model: ranks load it, the HTTP entrypoint answers the three APIs.
  std::optional<serving_config> serving;
  system_settings caf;
  /// Pause between attempts to reach the controller.
  std::chrono::milliseconds reconnect_interval{250};
  std::chrono::milliseconds instance_restart_delay{50};
  /// The cluster's balancers (used where `hosts_controller`: they run next to the controller).
  balancer_actors_config balancers;
  /// The controller's autoscaler (used where `hosts_controller`; interval 0: none). Its metrics
  /// go to this node's /metrics.
  autoscaler_settings autoscaler;
};

/// One node of a DeepInfer cluster inside this process: its CAF actor system, node agent,
/// controller (when it hosts one), instance supervisors, and HTTP entrypoint. This is the unit
/// an outside C++ service embeds (see examples/embed).
class node_runtime {
public:
  explicit node_runtime(node_runtime_config cfg);
  ~node_runtime();
  node_runtime(const node_runtime&) = delete;
  node_runtime& operator=(const node_runtime&) = delete;

  /// Starts everything. Returns an error message (port in use, bad address, ...) or nullopt.
  std::optional<std::string> start();

  /// Stops cleanly within about `deadline`: in-flight HTTP answered, the controller told that
  /// this node leaves, actors stopped. Idempotent. An embedding service must first stop the
  /// actors it spawned on `system()` (scoped_actors included): the system waits for all of them.
  void stop(std::chrono::milliseconds deadline = std::chrono::milliseconds{1500});

  /// Drains this node's decode instance (SIGTERM; issue 17): the routers pass it over at once,
  /// it decodes on for its grace period, then hands every unfinished request to other decode
  /// instances. Blocks until it holds none, or at most the grace plus `handoff_limit` (what is
  /// left then is resubmitted by its request once the node stops). The requests handed off;
  /// nullopt when the node has no decode instance.
  std::optional<uint64_t> drain(std::chrono::milliseconds handoff_limit = std::chrono::seconds{30});

  /// The bound HTTP port (after start), or 0 without an entrypoint.
  uint16_t http_port() const;

  /// What this node knows about the cluster.
  cluster_snapshot::state snapshot() const;

  /// The CAF actor system, for embedding services that spawn their own actors next to ours.
  caf::actor_system& system();

  /// Fault injection for tests and operators: fails rank `rank` of the local instance `role`.
  /// Returns false when there is no such instance.
  bool inject_rank_failure(node_role role, uint32_t rank, const std::string& reason);

  /// Reads `[http] api_keys_file` again (the launcher calls it on SIGHUP); the keys stay as
  /// they were, and the error is returned and logged, when the file cannot be used.
  std::optional<std::string> reload_api_keys();

  /// The status of a local instance as its supervisor reports it now.
  std::optional<instance_status> instance(node_role role);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace deepinfer::actors
