#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/draft_head.hpp"
#include "engine/speculative_mode.hpp"

namespace deepinfer::engine {

/// Chooses how many drafts each request of a decode step verifies (DESIGN.md §5.3). Fixed: all
/// of them. Variable: every (request, prefix length k) has the expected gain e = c_1 * ... * c_k
/// (the confidences' product: the chance that drafts 1..k are all accepted); candidates sorted
/// by e are taken best first, and the step keeps the count m that maximises the expected tokens
/// per second, (requests + sum of the first m gains) / cost(requests + m rows), on the verify
/// cost curve measured from the rank's own steps (`observe`). Deterministic given the curve and
/// the step count.
class spec_planner {
public:
  /// The verify cost curve cost(rows) = fixed + per_row * rows (seconds).
  struct cost_curve {
    double fixed = 0.0;
    double per_row = 0.0;
  };

  explicit spec_planner(speculative_mode mode);

  /// Drafts per request, in the order of `proposals` (0 for a request without drafts).
  /// Variable mode makes every `probe_every`-th step a plain one (no drafts): the curve is fitted
  /// from the rank's own steps, and steps of one row count only would never show what a row
  /// costs against the step's fixed part.
  std::vector<int32_t> plan(std::span<const draft_proposal> proposals);
  static constexpr uint64_t probe_every = 8;

  /// Adds one measured verify step (rows of the forward, seconds it took) to the curve.
  void observe(int64_t rows, double seconds);
  /// The curve as fitted now; until the rank has measured steps of two different row counts, a
  /// prior with rows costing the same as the step's fixed part over 16 rows.
  cost_curve curve() const;
  /// Sets the curve (tests; a curve profiled elsewhere).
  void set_curve(cost_curve c);

  speculative_mode mode() const { return mode_; }

private:
  speculative_mode mode_;
  // Exponentially weighted least squares of seconds on rows (recent steps count more: the curve
  // moves with the machine's load).
  double sw_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
  bool fixed_curve_ = false;
  uint64_t plans_ = 0;
  cost_curve set_;
};

} // namespace deepinfer::engine
