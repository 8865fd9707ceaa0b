#include "kv/check_index.hpp"

#include <mutex>

namespace deepinfer::kv {

check_index::check_index(probe revalidate) : probe_(std::move(revalidate)) {
  // nop
}

prefix_hit check_index::longest_prefix(std::span<const block_key> chain) {
  prefix_hit hit;
  // 1. Walk the set under one shared lock: the warm path is lookups only.
  {
    // Prefetching a few blocks ahead overlaps the cache misses of consecutive lookups.
    constexpr std::size_t ahead = 8;
    std::shared_lock guard{mtx_};
    for (std::size_t i = 0; i < ahead && i < chain.size(); ++i)
      keys_.prefetch(chain[i]);
    while (hit.blocks < chain.size() && keys_.contains(chain[hit.blocks])) {
      if (hit.blocks + ahead < chain.size())
        keys_.prefetch(chain[hit.blocks + ahead]);
      ++hit.blocks;
    }
  }
  if (!probe_)
    return hit;
  // 2. Revalidate the first miss against the store (no lock held during I/O); continue past
  // every block the probe or the set confirms.
  while (hit.blocks < chain.size()) {
    const auto& key = chain[hit.blocks];
    if (!contains(key)) {
      if (!probe_(key))
        break;
      insert(key);
      ++hit.revalidated;
    }
    ++hit.blocks;
  }
  return hit;
}

void check_index::insert(const block_key& key) {
  std::unique_lock guard{mtx_};
  keys_.insert(key);
}

bool check_index::erase(const block_key& key) {
  std::unique_lock guard{mtx_};
  return keys_.erase(key);
}

bool check_index::contains(const block_key& key) const {
  std::shared_lock guard{mtx_};
  return keys_.contains(key);
}

std::size_t check_index::size() const {
  std::shared_lock guard{mtx_};
  return keys_.size();
}

} // namespace deepinfer::kv
