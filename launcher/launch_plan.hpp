#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "actors/node/node_runtime.hpp"
#include "launcher/manifest.hpp"

namespace deepinfer::launcher {

/// How one node of a manifest will be started.
struct node_launch {
  const node_spec* node = nullptr;
  bool local = true;                ///< a child process here, or ssh to the node's host
  std::vector<std::string> argv;    ///< the exact command line (argv[0] = program)
};

/// Whether `host` names this machine (loopback, this host's name, or one of its addresses).
bool is_local_host(const std::string& host);

/// Resolves how every node is started. `self_exe` is this launcher's binary (for local children);
/// `extra_args` are appended to each node's command line (e.g. --log-level).
std::vector<node_launch> make_launch_plan(const cluster_manifest& m, const std::string& self_exe,
                                          const std::vector<std::string>& extra_args);

/// The resolved plan as text, for `--dry-run`: every node, how it starts, and every parameter
/// with defaults filled in.
std::string describe_plan(const cluster_manifest& m, const std::vector<node_launch>& plan);

/// Quotes one argument for a POSIX shell (used for the remote ssh command).
std::string shell_quote(const std::string& arg);

/// The node runtime configuration of node `node` of a manifest.
actors::node_runtime_config make_node_config(const cluster_manifest& m, const node_spec& node);

/// The cluster balancers' config from `[balancer.*]` (the controller's node runs them).
actors::balancer_actors_config make_balancer_config(const balancer_params& b);
/// A prefill rank's step budget (`[balancer.prefill] step_budget_ms`, `--prefill-step-ms`): the
/// one value the ranks' steps and the balancer's short-prompt reserve both follow.
std::chrono::microseconds prefill_step_of(const balancer_params& b);

/// The controller's autoscaler from `[autoscaler]` (DESIGN §6.5).
actors::autoscaler_settings make_autoscaler_settings(const autoscaler_params& a);

/// The embedded default: every role in one process, no CAF port, HTTP on `http`; `instances`
/// prefill and as many decode instances of `ranks` ranks each (one EP group each), balanced as
/// `balancer` says (caf-launch's --prefill-* flags set it).
actors::node_runtime_config make_embedded_config(const host_port& http, const std::string& model_name,
                                                  uint32_t ranks = 2, uint32_t instances = 1,
                                                  const balancer_params& balancer = {});

} // namespace deepinfer::launcher
