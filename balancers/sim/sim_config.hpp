#pragma once

#include "balancers/autoscaler.hpp"
#include "balancers/cost_model.hpp"
#include "balancers/decode_balancer.hpp"
#include "balancers/sim/kv_cache.hpp"

#include <string>

namespace deepinfer::balancers::sim {

/// How prefill requests are placed on ranks.
enum class prefill_policy {
  quota_buckets,     ///< DESIGN §6.1 (prefill_balancer)
  round_robin,       ///< baseline: next rank in turn, on arrival
  least_outstanding, ///< baseline: rank with fewest unfinished requests, on arrival
};

/// Decode step time of one instance (DESIGN §9 calibration, see bench/RESULTS.md):
/// `t = t0 + moe_lb * gamma * mean_r(n_r) + max_r(alpha * n_r + beta * kv_r)`; the oracle takes the
/// mean over ranks instead of the max and moe_lb = 1.
struct decode_cost {
  double t0 = 1.0e-3;        ///< fixed per step (launch, shared expert, sampling)
  double gamma = 24.6e-6;    ///< routed-MoE time per request on a rank
  double alpha = 8.2e-6;     ///< per-request attention/projection time
  double beta = 2.76e-10;    ///< attention time per KV token
  double moe_lb = 1.09;      ///< EP imbalance (bench_ep_moe_lb, decode EP64 with 1 redundant)
};

/// Whether the autoscaler's decisions change the cluster.
enum class autoscale_mode {
  advisory, ///< static cluster of `prefill_instances` + `decode_instances`; decisions only recorded
  applied,  ///< instances start after a provisioning delay and drain (DESIGN §6.5)
};

/// How instances come and go when the autoscaler is applied. The pool size is the autoscaler's
/// (`autoscaler::config::ready_pool`), the decode grace period too (`decode_grace_s`).
struct provisioning {
  double from_pool_s = 60.0;   ///< a ready-pool machine loads the model and serves after this
  double cold_s = 300.0;       ///< a machine started cold ("restarts take minutes", §6.5)
  double handoff_latency_s = 0.01;          ///< fixed cost of one handoff (connect, notify)
  double handoff_bytes_per_token = 896.0;   ///< KV bytes per token (block ~112 KiB / 128 tokens, §9)
  double handoff_bytes_per_s = 10e9;        ///< one rank's link for the KV it hands off
};

/// Everything the simulator needs; the CLI fills it from flags and an optional JSON file.
struct sim_config {
  int prefill_instances = 8;
  int prefill_dp = 8;
  int decode_instances = 1;
  int decode_dp = 64;
  prefill_policy policy = prefill_policy::quota_buckets;
  bool oracle = false;               ///< perfect balancing inside every step (efficiency reference)
  balancers::cost_model::calibration prefill_calibration{};
  double step_budget_s = 0.1;        ///< prefill step time budget (§5.3)
  double round_s = 10.0;             ///< bucket re-division period (§6.1)
  double quota_per_rank_s = 0.5;     ///< outstanding compute a prefill rank may pull
  bool whole_job_fits = false;       ///< prefill_balancer::config::whole_job_fits
  double short_reserve_s = 0.0;      ///< prefill_balancer::config::short_reserve_s
  decode_cost decode{};
  decode_balancer::config decode_router{};
  kv_cache::config cache{};
  autoscaler::config scaling{};
  double autoscale_s = 30.0;         ///< autoscaler decision period
  autoscale_mode autoscale = autoscale_mode::advisory;
  provisioning provision{};
  double ttft_slo_s = 2.0;           ///< a request meets the TTFT SLO when its TTFT is at most this
  double tpot_slo_s = 0.05;          ///< a request meets the TPOT SLO when its mean time per output token is at most this
  double sample_s = 10.0;            ///< time-series resolution
  double horizon_s = 0.0;            ///< stop at this virtual time (0: run until drained)
  bool progress = false;             ///< progress bar on stderr
};

} // namespace deepinfer::balancers::sim
