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
  std::vector<std::vector<int>> out(static_cast<std::size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r) {
    // How many of each expert the rank should end with; slots already holding one keep it.
    std::vector<int> want(static_cast<std::size_t>(experts_), 0);
    for (int e : proposed[static_cast<std::size_t>(r)])
      ++want[static_cast<std::size_t>(e)];
    auto old = rank_experts(layer, r);
    auto& slots = out[static_cast<std::size_t>(r)];
    slots.assign(static_cast<std::size_t>(slots_per_rank_), -1);
    for (int s = 0; s < slots_per_rank_; ++s)
      if (want[static_cast<std::size_t>(old[static_cast<std::size_t>(s)])] > 0) {
        slots[static_cast<std::size_t>(s)] = old[static_cast<std::size_t>(s)];
        --want[static_cast<std::size_t>(old[static_cast<std::size_t>(s)])];
      }
    int next = 0;
    for (int s = 0; s < slots_per_rank_; ++s) {
      if (slots[static_cast<std::size_t>(s)] >= 0)
        continue;
      while (want[static_cast<std::size_t>(next)] == 0)
        ++next;
      slots[static_cast<std::size_t>(s)] = next;
      --want[static_cast<std::size_t>(next)];
    }
  }
  return out;
}

} // namespace deepinfer::engine
