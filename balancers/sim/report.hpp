#pragma once

#include "balancers/sim/sim_config.hpp"
#include "balancers/sim/simulator.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace deepinfer::balancers::sim {

/// Turns a run into the JSON report and the SVG plots of `deepinfer-sim`.
class report {
public:
  /// Summary figures: hit ratio, TTFT percentiles, decode tokens/s per rank, balancing efficiency
  /// (ideal rank-seconds / spent rank-seconds per stage and together), rank-hours, TTFT and TPOT
  /// SLO attainment, requests lost, handoffs and scale events, wall time.
  static nlohmann::json summarize(sim_result& r, const sim_config& cfg, double wall_s);

  /// Writes ttft_cdf.svg, rank_load.svg, instances.svg and hit_ratio.svg into `dir` (which exists);
  /// `mode` says whether the instance counts followed the autoscaler or only recorded it.
  static void write_plots(sim_result& r, const std::string& dir, const std::string& tag,
                          autoscale_mode mode = autoscale_mode::advisory);

  /// Name of a policy for reports and flags.
  static std::string policy_name(prefill_policy p);
};

} // namespace deepinfer::balancers::sim
