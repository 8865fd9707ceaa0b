#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace deepinfer::engine {

/// One slot of an expert-parallel group: rank `rank`'s slot number `slot`.
struct slot_ref {
  int32_t rank = 0;
  int32_t slot = 0;
  friend bool operator==(slot_ref, slot_ref) = default;
};

/// Which routed expert each slot of an EP group holds, per MoE layer (DESIGN §6.4): every rank
/// has the same number of slots (the experts plus the redundant slots, total rounded up to a
/// multiple of the rank count), and every expert has at least one slot. Plain data: the group's
/// members each keep an identical copy.
class expert_placement {
public:
  /// Slots per rank for `experts` experts plus `redundant_per_rank` per rank over `ranks` ranks,
  /// the total rounded up to a multiple of `ranks` (ep_placer's rule).
  static int slots_per_rank(int experts, int ranks, int redundant_per_rank);

  /// An empty placement (every slot holds expert 0) of the given shape.
  expert_placement(int layers, int experts, int ranks, int slots_per_rank);

  int layers() const { return layers_; }
  int experts() const { return experts_; }
  int ranks() const { return ranks_; }
  int slots_per_rank() const { return slots_per_rank_; }

  /// Sets layer `layer`: `slots[rank]` lists the experts of that rank's slots in slot order.
  /// Precondition: `slots` has ranks() entries of slots_per_rank() experts each, all in range.
  void set_layer(int layer, const std::vector<std::vector<int>>& slots);

  /// The expert in `ref` at `layer`.
  int expert(int layer, slot_ref ref) const {
    return slot_expert_[static_cast<std::size_t>(layer)]
                       [static_cast<std::size_t>(ref.rank * slots_per_rank_ + ref.slot)];
  }
  /// Every slot holding `expert` at `layer` (ascending rank, then slot); empty only when the
  /// placement is invalid.
  std::span<const slot_ref> replicas(int layer, int expert) const {
    return replicas_[static_cast<std::size_t>(layer * experts_ + expert)];
  }
  /// The experts of `rank`'s slots at `layer`, in slot order.
  std::vector<int> rank_experts(int layer, int rank) const;

  /// Empty when every expert of every layer has at least one slot; otherwise what is wrong.
  std::string check() const;

  /// `proposed` (sets of experts for the ranks at `layer`: which rank gets which set does not
  /// matter to the balance) laid onto the ranks so that few weights move: each set goes to the
  /// rank that holds most of it now (greedy), and a slot keeps its expert when the rank's new set
  /// has it; only the other slots need weights moved in.
  std::vector<std::vector<int>> keep_in_place(int layer, const std::vector<std::vector<int>>& proposed) const;

  friend bool operator==(const expert_placement&, const expert_placement&) = default;

private:
  void index_layer(int layer);
  int layers_, experts_, ranks_, slots_per_rank_;
  std::vector<std::vector<int32_t>> slot_expert_;  // [layer][rank * slots + slot]
  std::vector<std::vector<slot_ref>> replicas_;    // [layer * experts + expert]
};

} // namespace deepinfer::engine
