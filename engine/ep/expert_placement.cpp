#include "engine/ep/expert_placement.hpp"

#include <fmt/format.h>

namespace deepinfer::engine {

int expert_placement::slots_per_rank(int experts, int ranks, int redundant_per_rank) {
  const int total = experts + ranks * redundant_per_rank;
  return (total + ranks - 1) / ranks;
}

expert_placement::expert_placement(int layers, int experts, int ranks, int slots_per_rank)
    : layers_(layers), experts_(experts), ranks_(ranks), slots_per_rank_(slots_per_rank),
      slot_expert_(static_cast<std::size_t>(layers),
                   std::vector<int32_t>(static_cast<std::size_t>(ranks * slots_per_rank), 0)),
      replicas_(static_cast<std::size_t>(layers * experts)) {
  for (int l = 0; l < layers; ++l)
    index_layer(l);
}

void expert_placement::set_layer(int layer, const std::vector<std::vector<int>>& slots) {
  auto& row = slot_expert_[static_cast<std::size_t>(layer)];
  for (int r = 0; r < ranks_; ++r)
    for (int s = 0; s < slots_per_rank_; ++s)
      row[static_cast<std::size_t>(r * slots_per_rank_ + s)] =
          slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(s)];
  index_layer(layer);
}

void expert_placement::index_layer(int layer) {
  for (int e = 0; e < experts_; ++e)
    replicas_[static_cast<std::size_t>(layer * experts_ + e)].clear();
  const auto& row = slot_expert_[static_cast<std::size_t>(layer)];
  for (int r = 0; r < ranks_; ++r)
    for (int s = 0; s < slots_per_rank_; ++s)
      replicas_[static_cast<std::size_t>(layer * experts_ + row[static_cast<std::size_t>(r * slots_per_rank_ + s)])]
          .push_back({r, s});
}

std::vector<int> expert_placement::rank_experts(int layer, int rank) const {
  const auto& row = slot_expert_[static_cast<std::size_t>(layer)];
  auto first = row.begin() + rank * slots_per_rank_;
  return {first, first + slots_per_rank_};
}

std::string expert_placement::check() const {
  for (int l = 0; l < layers_; ++l)
    for (int e = 0; e < experts_; ++e)
      if (replicas(l, e).empty())
        return fmt::format("layer {}: expert {} has no slot", l, e);
  return {};
}

std::vector<std::vector<int>> expert_placement::keep_in_place(
    int layer, const std::vector<std::vector<int>>& proposed) const {
  const auto ranks = static_cast<std::size_t>(ranks_);
  const auto experts = static_cast<std::size_t>(experts_);
  // 1. which rank takes which proposed set: the placer's ranks are interchangeable, so give each
  // set to the rank that already holds most of it (greedy on the overlap, ties to the lower ids).
  std::vector<std::vector<int>> have(ranks, std::vector<int>(experts, 0));
  for (std::size_t r = 0; r < ranks; ++r)
    for (int e : rank_experts(layer, static_cast<int>(r)))
      ++have[r][static_cast<std::size_t>(e)];
  auto overlap = [&](std::size_t set, std::size_t r) {
    std::vector<int> left = have[r];
    int n = 0;
    for (int e : proposed[set])
      if (left[static_cast<std::size_t>(e)]-- > 0)
        ++n;
    return n;
  };
  std::vector<std::vector<int>> gain(ranks, std::vector<int>(ranks));
  for (std::size_t set = 0; set < ranks; ++set)
    for (std::size_t r = 0; r < ranks; ++r)
      gain[set][r] = overlap(set, r);
  std::vector<int> set_of(ranks, -1);
  std::vector<bool> set_taken(ranks, false);
  for (std::size_t k = 0; k < ranks; ++k) {
    int best = -1;
    std::size_t bs = 0, br = 0;
    for (std::size_t set = 0; set < ranks; ++set)
      for (std::size_t r = 0; r < ranks; ++r)
        if (!set_taken[set] && set_of[r] < 0 && gain[set][r] > best) {
          best = gain[set][r];
          bs = set;
          br = r;
        }
    set_taken[bs] = true;
    set_of[br] = static_cast<int>(bs);
  }
  // 2. on each rank, a slot keeps its expert when the rank's set still has it; the others
  // take the rest of the set in order.
  std::vector<std::vector<int>> out(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    std::vector<int> want(experts, 0);
    for (int e : proposed[static_cast<std::size_t>(set_of[r])])
      ++want[static_cast<std::size_t>(e)];
    auto old = rank_experts(layer, static_cast<int>(r));
    auto& slots = out[r];
    slots.assign(static_cast<std::size_t>(slots_per_rank_), -1);
    for (std::size_t s = 0; s < slots.size(); ++s)
      if (want[static_cast<std::size_t>(old[s])] > 0) {
        slots[s] = old[s];
        --want[static_cast<std::size_t>(old[s])];
      }
    std::size_t next = 0;
    for (auto& slot : slots) {
      if (slot >= 0)
        continue;
      while (want[next] == 0)
        ++next;
      slot = static_cast<int>(next);
      --want[next];
    }
  }
  return out;
}

} // namespace deepinfer::engine
