#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace deepinfer::engine {

class backend;
struct moe_weights;

/// The routed-expert weights one rank of an EP group holds: for every MoE layer, one buffer per
/// slot with that slot's expert (gate w1 [ffn x hidden], up w3 [ffn x hidden], down w2
/// [hidden x ffn], contiguous). The rank keeps nothing of the experts it has no slot for, so its
/// routed-expert memory is slots / experts of the model's (about 1/EP).
class expert_slots {
public:
  /// Shape of the slots.
  struct shape {
    int layers = 0;
    int slots = 0;
    int64_t hidden = 0;
    int64_t ffn = 0;
  };
  /// One slot's matrices.
  struct expert_view {
    const float* w1 = nullptr;
    const float* w3 = nullptr;
    const float* w2 = nullptr;
  };

  explicit expert_slots(const shape& s);

  const shape& geometry() const { return shape_; }
  /// Floats of one slot (3 x ffn x hidden).
  std::size_t floats_per_slot() const { return static_cast<std::size_t>(3 * shape_.ffn * shape_.hidden); }
  /// Bytes of every slot buffer.
  std::size_t bytes() const;

  /// Copies expert `expert` of `m` (one layer's stacked experts) into slot `slot` of `layer`.
  void load(int layer, int slot, const moe_weights& m, int expert);
  expert_view at(int layer, int slot) const;
  /// The slot's whole buffer (what a replica move sends).
  const float* data(int layer, int slot) const { return slot_(layer, slot).data(); }

  /// Puts `fresh` (floats_per_slot() floats) in the slot and returns the buffer it held.
  std::vector<float> replace(int layer, int slot, std::vector<float> fresh);

  /// Hands every slot's matrices to `b.prepare_weight` / `b.release_weight`.
  void prepare(backend& b) const;
  void release(backend& b) const;
  /// The same for one slot.
  static void prepare(backend& b, const expert_view& v, const shape& s);
  static void release(backend& b, const expert_view& v, const shape& s);

private:
  const std::vector<float>& slot_(int layer, int slot) const {
    return buffers_[static_cast<std::size_t>(layer * shape_.slots + slot)];
  }
  shape shape_;
  std::vector<std::vector<float>> buffers_;  // [layer * slots + slot]
};

} // namespace deepinfer::engine
