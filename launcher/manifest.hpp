#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/entrypoint/admission_control.hpp"
#include "actors/transport/kv_transport_choice.hpp"
#include "actors/node/node_runtime.hpp"
#include "actors/node/serving_config.hpp"
#include "actors/names.hpp"
#include "engine/backends/backend_kind.hpp"
#include "actors/node/system_settings.hpp"
#include "recipe/base/host_port.hpp"

namespace deepinfer::launcher {

/// The roles a node can play (DESIGN §3).
using actors::node_role;

/// Which compute backend a node's ranks use.
using engine::backend_kind;

/// How caf-launch starts a node: `automatic` = a child process when the host is this machine,
/// ssh otherwise.
enum class launch_method : uint8_t { automatic, local, ssh };

/// When the launcher restarts a node process that exited.
enum class restart_policy : uint8_t { never, on_failure, always };

/// A `host:port` pair (the project's one endpoint type and parser).
using deepinfer::host_port;
using deepinfer::parse_host_port;

/// One `[[nodes]]` entry.
struct node_spec {
  std::string name;
  std::string host;
  uint16_t port = 0;              ///< CAF port: the controller or node agent is published here
  std::vector<node_role> roles;
  /// A ready-pool node (`roles = ["pool"]`, or `standby = true`; issue 17): it starts, joins and
  /// waits until the controller's autoscaler makes it a prefill or decode instance (those listed
  /// in `roles`, or either when none is). `roles` then holds `pool` too.
  bool standby = false;
  uint32_t ranks = 1;             ///< ranks per prefill/decode instance on this node (EP size)
  /// Prefill / decode instances on this node, each its own EP group of `ranks` ranks (named
  /// node/role, node/role.2, ...).
  uint32_t instances = 1;
  backend_kind backend = backend_kind::cpu;
  /// CPU kernels of the node's ranks: auto (the best its CPU runs), portable, avx2 or avx512;
  /// every choice gives the same bits. Checked against the CPU when the node starts.
  std::string cpu_isa = "auto";
  /// CPUs the node's process runs on, in Linux's list syntax ("0-3", "0,2"; `parse_cpu_list`);
  /// empty: every CPU it may use. Checked against the machine when the node starts.
  std::string cpus;
  std::optional<host_port> http;  ///< entrypoints: where HTTP listens (default host:8000)
  launch_method launch = launch_method::automatic;
  std::string ssh_user;           ///< empty: ssh's default
  uint16_t ssh_port = 22;
  int line = 0;                   ///< where the entry starts in the manifest

  bool has(node_role r) const;
  /// The instance roles a ready-pool node may be given (empty for other nodes).
  std::vector<node_role> pool_roles() const;
};

/// `[kv]`: the prefix cache (DESIGN §4).
struct kv_params {
  std::string root;                       ///< block store root directory (required)
  double ttl_agent_hours = 72;            ///< 3 days
  double ttl_chatbot_hours = 168;         ///< 7 days
  double gc_low_watermark = 0.80;         ///< fraction of the disk budget GC evicts down to
  double gc_high_watermark = 0.90;        ///< fraction at which GC starts evicting
  uint64_t disk_budget_gib = 0;           ///< 0 = the filesystem's size
  double swa_ttl_seconds = 180;
  uint64_t swa_memory_mib = 1024;
  /// Exported blocks a node's writer thread may hold before they are on the store; beyond it a
  /// block waits on its rank (offered again later).
  uint64_t write_queue_mib = 256;
  bool fsync = false;
};

/// Expert-parallel re-placement of one instance kind (DESIGN §6.4).
struct expert_parallel_params {
  uint32_t redundant_experts_per_rank = 0;
  uint32_t window_steps = 1;   ///< expert loads counted over this many steps
  uint32_t replace_steps = 1;  ///< replicas re-placed every this many steps
};

/// `[balancer.prefill]` and `[balancer.decode]` (DESIGN §6).
struct balancer_params {
  std::vector<uint64_t> prefill_bucket_bounds{16384, 65536, 262144};
  /// Time budget of one chunked-prefill step on a prefill rank: how long a new prompt, a cancel
  /// or a ping waits behind a long prompt (`--prefill-step-ms` overrides).
  double prefill_step_budget_ms = 100;
  /// Compute-quota (fitted seconds of prefill) a prefill rank may hold before its instance
  /// stops pulling from the balancer's queue (`[balancer.prefill] quota_per_rank_s`).
  double prefill_quota_per_rank_s = 4.0;
  /// An instance pulls only a job that fits in its quota left, or any job when it holds none;
  /// a job priced at most one step budget may overrun the quota by that much when no instance
  /// has room (`[balancer.prefill] whole_job_fits`; default false: any job while quota is left).
  bool prefill_whole_job_fits = false;
  /// How often the length buckets are re-divided by demand (`[balancer.prefill] round_ms`).
  uint32_t prefill_round_ms = 1000;
  /// Requests one decode rank holds at most (`[balancer.decode] max_batch`).
  uint32_t decode_max_batch = 256;
  expert_parallel_params prefill_ep{4, 100, 1000};
  expert_parallel_params decode_ep{1, 1000, 10000};
};

/// `[autoscaler]` (DESIGN §6.5).
struct autoscaler_params {
  uint32_t min_prefill_instances = 1;
  uint32_t max_prefill_instances = 64;
  uint32_t min_decode_instances = 1;
  uint32_t max_decode_instances = 64;
  uint32_t ready_pool = 1;                ///< idle pool nodes to keep in reserve (warned when fewer)
  double quota_high_water = 0.8;          ///< never scale down above this quota use
  double decode_grace_seconds = 60;
  double interval_seconds = 10;
  uint32_t max_step = 2;                  ///< instances added or removed per interval at most
  /// What one instance serves (DESIGN §6.5): uncached prompt tokens per second for prefill,
  /// requests in flight for decode; the targets are the load over these, times `headroom`.
  double prefill_missed_tokens_per_s = 480e3;
  double decode_requests_per_instance = 3000;
  double headroom = 1.2;
  /// A prefill queue p90 above this adds prefill instances whatever the token rate says.
  double queue_time_target_seconds = 1.0;
};

/// `[supervision]`: how the launcher treats node processes that exit.
struct supervision_params {
  restart_policy restart = restart_policy::on_failure;
  uint32_t restart_delay_ms = 1000;
  uint32_t max_restarts_per_minute = 10;
};

/// `[remote]`: how nodes on other hosts are started.
struct remote_params {
  std::string command = "caf-launch";   ///< the launcher binary on remote hosts
  std::string manifest;                 ///< this manifest's path there (default: same path)
  std::vector<std::string> ssh_options; ///< extra ssh arguments, e.g. {"-i", "/etc/deepinfer/key"}
};

/// A whole, validated cluster manifest with every default resolved.
struct cluster_manifest {
  std::string source_path;             ///< absolute path of the file
  std::string model_path;              ///< required
  std::string model_name = "deepseek-v4.1-flash";
  std::string template_version = "dsv41";
  std::string log_level = "info";
  /// `[http]`: limits, timeouts, Host allow-list and CORS of every entrypoint (its host, port and
  /// models come from its node entry).
  actors::http_endpoint http;
  /// `[requests]`: JSON depth, stall timeout, deadline, API keys.
  actors::request_limits requests;
  /// `[admission]`: admission control of every entrypoint.
  actors::admission_control::config admission;
  /// `[so]`: structured-output compile cache (MiB) and compile timeout.
  uint64_t so_cache_mib = 256;
  uint32_t so_compile_timeout_ms = 2000;
  /// `[so] json_whitespace`: the most whitespace bytes in a row between JSON tokens (-1: any).
  int32_t so_json_whitespace = 16;
  /// `[vision]`: what one image may be (max_pixels, max_image_bytes) and how many a request may
  /// carry (max_images_per_request).
  recipe::image_limits vision;
  /// `[vision]`: how http(s) image URLs are fetched (fetch_timeout_s, fetch_max_redirects,
  /// fetch_private_addresses, fetch_ca_file).
  actors::http::image_fetcher::config image_fetch;
  /// `[vision] balancer`: "patches" (the seeds' rule, default) or "round_robin".
  balancers::vision_policy vision_balancer = balancers::vision_policy::patches;
  /// `[vision] scheduling` ("idle", default: SCHED_IDLE; "normal") and `nice` (0-19, under
  /// "normal"): the CPU priority of the vision ranks' encoder threads (actors::serving_config).
  engine::thread_priority vision_priority{true, 10};
  /// `[vision] background_body_bytes`: request bodies this large or larger are parsed at the
  /// vision priority (actors::serving_config; 0: never).
  uint64_t vision_background_body_bytes = uint64_t{1} << 20;
  actors::system_settings caf;
  /// `kv_transport`: how KV crosses processes (auto | caf_message | rdma; actors/kv_transport_choice.hpp).
  actors::kv_transport_mode kv_transport = actors::kv_transport_mode::automatic;
  /// `rdma_port`: the port of each node's RDMA KV listener on its `host` (0: a free one).
  uint16_t rdma_port = 0;
  kv_params kv;
  balancer_params balancer;
  autoscaler_params autoscaler;
  supervision_params supervision;
  remote_params remote;
  std::vector<node_spec> nodes;

  const node_spec* find_node(const std::string& name) const;
  /// What a valid manifest still cannot do, in words (empty: nothing): e.g. no node that can
  /// prefill, so every request would wait for capacity until it times out. Printed at start.
  std::vector<std::string> warnings() const;
  const node_spec& controller() const;
};

/// What is wrong with a manifest: file, line and key, and a sentence that says what to do.
struct manifest_error {
  std::string file;
  int line = 0;
  std::string key;      ///< dotted path, e.g. `nodes[1].roles[0]`; empty for syntax errors
  std::string message;

  /// `FILE:LINE: key 'K': MESSAGE`
  std::string to_string() const;
};

using manifest_result = std::variant<cluster_manifest, manifest_error>;

/// Reads, parses and validates a manifest file.
manifest_result load_manifest(const std::string& path);

/// Parses and validates manifest text; `display_name` is used as the file in errors.
manifest_result parse_manifest(std::string_view text, const std::string& display_name);


using actors::to_string;
using engine::to_string;
const char* to_string(launch_method m);
const char* to_string(restart_policy p);

} // namespace deepinfer::launcher
