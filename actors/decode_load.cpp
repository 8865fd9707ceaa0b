#include "actors/decode_load.hpp"

namespace deepinfer::actors {

decode_load::decode_load(uint32_t ranks, balancers::decode_balancer::config cfg)
  : router_(cfg), ranks_(ranks == 0 ? 1 : ranks) {
  // nop
}

std::unique_ptr<decode_load::lease> decode_load::assign(const std::shared_ptr<decode_load>& self,
                                                        int64_t kv_tokens) {
  std::lock_guard<std::mutex> guard{self->mtx_};
  auto choice = self->router_.choose(self->ranks_, kv_tokens);
  if (!choice)
    return nullptr;
  auto& r = self->ranks_[static_cast<size_t>(*choice)];
  ++r.requests;
  r.kv_tokens += kv_tokens;
  return std::make_unique<lease>(self, static_cast<uint32_t>(*choice), kv_tokens);
}

std::vector<balancers::decode_balancer::rank_state> decode_load::snapshot() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return ranks_;
}

void decode_load::release(uint32_t rank, int64_t kv_tokens) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& r = ranks_[rank];
  --r.requests;
  r.kv_tokens -= kv_tokens;
}

} // namespace deepinfer::actors
