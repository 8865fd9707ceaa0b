#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace deepinfer::balancers {

/// Expert-parallel balancer of DESIGN §6.4: every rank holds a fixed number of expert slots (its
/// experts plus redundant slots, total rounded up to a multiple of EP). Expert loads are counted
/// over the last N steps; every M steps the replicas are re-placed (weights move inside the
/// instance) so the hottest experts get more replicas and rank loads even out.
class ep_placer {
public:
  struct config {
    int experts = 256;
    int ranks = 4;                 ///< EP size
    int redundant_per_rank = 4;
    int window = 100;              ///< N: steps of load history
    int interval = 1000;           ///< M: steps between re-placements
  };

  explicit ep_placer(const config& cfg);

  /// Slots per rank after rounding the total up to a multiple of EP.
  int slots_per_rank() const { return slots_per_rank_; }

  /// Records one step's per-expert load (tokens routed to each expert); re-places every M steps.
  /// Returns true when this step triggered a re-placement.
  bool record_step(std::span<const double> expert_load);

  /// Re-places now from `load` (per-expert): replica counts by the largest load per replica, then
  /// longest-processing-time placement into the rank with the least load and a free slot, then
  /// swaps between the heaviest rank and the others while a swap lowers it.
  void place(std::span<const double> load);

  /// Ranks holding a replica of each expert.
  const std::vector<std::vector<int>>& replicas() const { return replicas_; }

  /// Experts in each rank's slots.
  const std::vector<std::vector<int>>& slots() const { return slots_; }

  /// The rank serving the `token`-th token routed to `expert` in a step (round robin over replicas).
  int route(int expert, uint64_t token) const;

  /// Per-rank load when each expert's load is split evenly over its replicas (what round-robin
  /// routing gives in expectation and exactly for multiples of the replica count).
  std::vector<double> rank_load(std::span<const double> expert_load) const;

  /// moe_lb = slowest rank's load / mean rank load (1.0 for an all-zero load).
  static double moe_lb(std::span<const double> rank_loads);

private:
  /// Swaps replicas between the heaviest rank and the others while that lowers it (after LPT).
  void refine(std::span<const double> load, const std::vector<int>& count, std::vector<double>& rank_sum);

  config cfg_;
  int slots_per_rank_ = 0;
  std::vector<std::vector<int>> replicas_;
  std::vector<std::vector<int>> slots_;
  std::vector<std::vector<double>> history_; // ring of the last N steps
  std::vector<double> window_sum_;
  size_t history_pos_ = 0;
  int64_t steps_ = 0;
};

} // namespace deepinfer::balancers
