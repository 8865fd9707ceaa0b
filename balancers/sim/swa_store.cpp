#include "balancers/sim/swa_store.hpp"

namespace deepinfer::balancers::sim {

void swa_store::put(uint64_t key, double now) { at_[key] = now; }

bool swa_store::has(uint64_t key, double now) const {
  const auto it = at_.find(key);
  return it != at_.end() && it->second + cfg_.ttl_s >= now;
}

void swa_store::collect(double now) {
  std::erase_if(at_, [&](const auto& kv) { return kv.second + cfg_.ttl_s < now; });
}

} // namespace deepinfer::balancers::sim
