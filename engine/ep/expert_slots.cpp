#include "engine/ep/expert_slots.hpp"

#include <cstring>

#include "engine/backends/backend.hpp"
#include "engine/model/weights.hpp"

namespace deepinfer::engine {

expert_slots::expert_slots(const shape& s)
    : shape_(s), buffers_(static_cast<std::size_t>(s.layers * s.slots),
                          std::vector<float>(static_cast<std::size_t>(3 * s.ffn * s.hidden))) {}

std::size_t expert_slots::bytes() const {
  return buffers_.size() * floats_per_slot() * sizeof(float);
}

void expert_slots::load(int layer, int slot, const moe_weights& m, int expert) {
  const int64_t fh = shape_.ffn * shape_.hidden;
  auto& buf = buffers_[static_cast<std::size_t>(layer * shape_.slots + slot)];
  std::memcpy(buf.data(), m.w1 + expert * fh, sizeof(float) * static_cast<std::size_t>(fh));
  std::memcpy(buf.data() + fh, m.w3 + expert * fh, sizeof(float) * static_cast<std::size_t>(fh));
  std::memcpy(buf.data() + 2 * fh, m.w2 + expert * fh, sizeof(float) * static_cast<std::size_t>(fh));
}

expert_slots::expert_view expert_slots::at(int layer, int slot) const {
  const int64_t fh = shape_.ffn * shape_.hidden;
  const float* p = slot_(layer, slot).data();
  return {p, p + fh, p + 2 * fh};
}

std::vector<float> expert_slots::replace(int layer, int slot, std::vector<float> fresh) {
  auto& buf = buffers_[static_cast<std::size_t>(layer * shape_.slots + slot)];
  std::swap(buf, fresh);
  return fresh;
}

void expert_slots::prepare(backend& b, const expert_view& v, const shape& s) {
  b.prepare_weight(v.w1, s.ffn, s.hidden);
  b.prepare_weight(v.w3, s.ffn, s.hidden);
  b.prepare_weight(v.w2, s.hidden, s.ffn);
}

void expert_slots::release(backend& b, const expert_view& v, const shape& s) {
  b.release_weight(v.w1, s.ffn, s.hidden);
  b.release_weight(v.w3, s.ffn, s.hidden);
  b.release_weight(v.w2, s.hidden, s.ffn);
}

void expert_slots::prepare(backend& b) const {
  for (int l = 0; l < shape_.layers; ++l)
    for (int s = 0; s < shape_.slots; ++s)
      prepare(b, at(l, s), shape_);
}

void expert_slots::release(backend& b) const {
  for (int l = 0; l < shape_.layers; ++l)
    for (int s = 0; s < shape_.slots; ++s)
      release(b, at(l, s), shape_);
}

} // namespace deepinfer::engine
