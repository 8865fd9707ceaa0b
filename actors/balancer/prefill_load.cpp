#include "actors/balancer/prefill_load.hpp"

namespace deepinfer::actors {

std::string prefill_load::lease::instance() const {
  std::lock_guard<std::mutex> guard{table_->mtx_};
  return table_->slots_[slot_].instance;
}

uint32_t prefill_load::lease::rank() const {
  std::lock_guard<std::mutex> guard{table_->mtx_};
  return table_->slots_[slot_].rank;
}

std::unique_ptr<prefill_load::lease> prefill_load::assign(const std::shared_ptr<prefill_load>& self,
                                                          std::span<const live_instance> live,
                                                          double quota_s) {
  std::lock_guard<std::mutex> guard{self->mtx_};
  auto& slots = self->slots_;
  std::size_t best = slots.size();
  bool found = false;
  for (auto& inst : live)
    for (uint32_t r = 0; r < inst.ranks; ++r) {
      auto i = slot_index(slots, inst.name, r);
      auto better = [&](const slot_load& a, const slot_load& b) {
        return a.quota_s < b.quota_s || (a.quota_s == b.quota_s && a.requests < b.requests);
      };
      if (!found || better(slots[i], slots[best])) {
        best = i;
        found = true;
      }
    }
  if (!found)
    return nullptr;
  ++slots[best].requests;
  slots[best].quota_s += quota_s;
  return std::make_unique<lease>(self, best, quota_s);
}

std::vector<prefill_load::slot_load> prefill_load::snapshot() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return slots_;
}

void prefill_load::release(std::size_t slot, double quota) {
  std::lock_guard<std::mutex> guard{mtx_};
  --slots_[slot].requests;
  slots_[slot].quota_s -= quota;
  if (slots_[slot].requests == 0)
    slots_[slot].quota_s = 0.0;  // no drift from floating-point sums
}

} // namespace deepinfer::actors
