#pragma once

#include <vector>

#include "engine/ep/expert_placement.hpp"

namespace deepinfer::engine {

/// Re-places the experts of every layer with `balancers::ep_placer` (replica counts by load per
/// replica, then longest-processing-time onto the least loaded rank) for `load[layer][expert]`
/// (tokens routed over the last window; all equal when `load` is empty), over `ranks` ranks with
/// `redundant_per_rank` redundant slots each. Slots keep their expert where `current` (when given
/// and of the same shape) already has it on that rank, so only the other slots move weights.
expert_placement place_experts(int layers, int experts, int ranks, int redundant_per_rank,
                               const std::vector<std::vector<double>>& load,
                               const expert_placement* current = nullptr);

} // namespace deepinfer::engine
