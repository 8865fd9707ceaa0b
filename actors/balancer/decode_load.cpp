#include "actors/balancer/decode_load.hpp"

namespace deepinfer::actors {

std::string decode_load::lease::instance() const {
  std::lock_guard<std::mutex> guard{table_->mtx_};
  return table_->slots_[slot_].instance;
}

uint32_t decode_load::lease::rank() const {
  std::lock_guard<std::mutex> guard{table_->mtx_};
  return table_->slots_[slot_].rank;
}

decode_load::decode_load(balancers::decode_balancer::config cfg) : router_(cfg) {
  slots_.reserve(64);
}

std::unique_ptr<decode_load::lease> decode_load::assign(const std::shared_ptr<decode_load>& self,
                                                        std::span<const live_instance> live,
                                                        int64_t kv_tokens) {
  std::lock_guard<std::mutex> guard{self->mtx_};
  auto& slots = self->slots_;
  std::vector<std::size_t> index;
  std::vector<balancers::decode_balancer::rank_state> loads;
  for (auto& inst : live)
    for (uint32_t r = 0; r < inst.ranks; ++r) {
      auto i = slot_index(slots, inst.name, r);
      index.push_back(i);
      loads.push_back(slots[i].load);
    }
  auto choice = self->router_.choose(loads, kv_tokens);
  if (!choice)
    return nullptr;
  auto slot = index[static_cast<std::size_t>(*choice)];
  auto& l = slots[slot].load;
  ++l.requests;
  l.kv_tokens += kv_tokens;
  return std::make_unique<lease>(self, slot, kv_tokens);
}

std::vector<decode_load::slot_load> decode_load::snapshot() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return slots_;
}

void decode_load::release(std::size_t slot, int64_t kv_tokens) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& l = slots_[slot].load;
  --l.requests;
  l.kv_tokens -= kv_tokens;
}

} // namespace deepinfer::actors
