#include "kv/consistent_hash_ring.hpp"

#include <algorithm>

#include <xxhash.h>

namespace deepinfer::kv {

consistent_hash_ring::consistent_hash_ring(const config& cfg) : cfg_(cfg) {
  // nop
}

bool consistent_hash_ring::add(shard_id shard) {
  if (std::find(shards_.begin(), shards_.end(), shard) != shards_.end())
    return false;
  shards_.push_back(shard);
  for (uint32_t v = 0; v < cfg_.vnodes; ++v) {
    const uint64_t seed[2] = {shard.value, v};
    points_.emplace_back(XXH3_64bits(seed, sizeof(seed)), shard);
  }
  std::sort(points_.begin(), points_.end());
  return true;
}

bool consistent_hash_ring::remove(shard_id shard) {
  auto it = std::find(shards_.begin(), shards_.end(), shard);
  if (it == shards_.end())
    return false;
  shards_.erase(it);
  std::erase_if(points_, [&](const auto& p) { return p.second == shard; });
  return true;
}

std::optional<shard_id> consistent_hash_ring::owner(const block_key& key) const {
  if (points_.empty())
    return std::nullopt;
  // Keys are XXH3 outputs already, so the high word is a uniform point on the ring.
  auto it = std::lower_bound(points_.begin(), points_.end(), key.hi,
                             [](const auto& p, uint64_t point) { return p.first < point; });
  if (it == points_.end())
    it = points_.begin();
  return it->second;
}

} // namespace deepinfer::kv
