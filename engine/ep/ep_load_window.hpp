#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::engine {

/// The expert loads of an EP group over its last N steps (DESIGN §6.4): per MoE layer, the
/// tokens routed to each expert (what re-placement balances), and the rows each rank's slots
/// computed (what moe_lb measures).
class ep_load_window {
public:
  /// A window of `window` steps (>= 1) for `layers` MoE layers of `experts` experts on `ranks` ranks.
  ep_load_window(int layers, int experts, int ranks, int window);

  /// Adds one step: `routed[layer * experts + e]` tokens routed to expert e (summed over the
  /// group's ranks), `served[layer * ranks + r]` rows computed by rank r's slots. The oldest step
  /// leaves once the window is full.
  void add_step(const std::vector<int64_t>& routed, const std::vector<int64_t>& served);

  /// Tokens routed to each expert of `layer` over the window.
  std::vector<double> expert_load(int layer) const;
  /// Rows each rank computed at `layer` over the window.
  std::vector<double> rank_load(int layer) const;
  /// moe_lb over the window: the slowest rank's routed tokens / the mean, per layer, summed over
  /// layers (a lockstep layer waits for its slowest rank): sum_l max_r / sum_l mean_r. 1.0 while
  /// nothing was routed.
  double moe_lb() const;
  /// Steps in the window (at most its size).
  int steps() const { return static_cast<int>(routed_.size()); }

private:
  int layers_, experts_, ranks_, window_;
  std::vector<std::vector<int64_t>> routed_, served_; // ring of the last steps
  std::size_t next_ = 0;
  std::vector<int64_t> routed_sum_, served_sum_;
};

} // namespace deepinfer::engine
