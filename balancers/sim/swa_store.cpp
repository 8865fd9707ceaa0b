#include "balancers/sim/swa_store.hpp"

namespace deepinfer::balancers::sim {

void swa_store::rehash(size_t slots, double now, bool drop_expired) {
  std::vector<slot> old(slots);
  old.swap(table_);
  size_ = 0;
  const size_t mask = table_.size() - 1;
  for (const auto& s : old) {
    if (s.key == 0 || (drop_expired && s.at + cfg_.ttl_s < now))
      continue;
    size_t i = s.key & mask;
    while (table_[i].key != 0)
      i = (i + 1) & mask;
    table_[i] = s;
    ++size_;
  }
}

void swa_store::put(uint64_t key, double now) {
  if (2 * (size_ + 1) > table_.size())
    rehash(2 * table_.size(), now, false);
  const uint64_t k = stored_key(key);
  const size_t mask = table_.size() - 1;
  size_t i = k & mask; // chain ids are already mixed
  while (table_[i].key != 0 && table_[i].key != k)
    i = (i + 1) & mask;
  if (table_[i].key == 0)
    ++size_;
  table_[i] = {k, now};
}

bool swa_store::has(uint64_t key, double now) const {
  const uint64_t k = stored_key(key);
  const size_t mask = table_.size() - 1;
  for (size_t i = k & mask; table_[i].key != 0; i = (i + 1) & mask)
    if (table_[i].key == k)
      return table_[i].at + cfg_.ttl_s >= now;
  return false;
}

void swa_store::collect(double now) {
  // Rebuild without the expired entries; shrink when the live set got much smaller.
  size_t slots = table_.size();
  while (slots > 1024 && size_ * 8 < slots)
    slots /= 2;
  rehash(slots, now, true);
}

} // namespace deepinfer::balancers::sim
