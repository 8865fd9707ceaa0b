#pragma once

#include <cstdint>

namespace deepinfer::engine {

/// One measured speculative step (DESIGN §5.3): `seqs` sequences verifying drafts in `rows` rows
/// (sequences + drafts) took `seconds`, the draft head proposing after it (`proposing`) or
/// paused. `cost_profile::measure_verify` measures them, the model's cost_model.json keeps them,
/// `spec_planner::set_verify_costs` prices plans on them.
struct verify_cost_point {
  int64_t seqs = 0;
  int64_t rows = 0;
  double seconds = 0.0;
  bool proposing = true;
};

} // namespace deepinfer::engine
