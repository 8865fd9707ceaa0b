#include "kv/lru_ttl_policy.hpp"

namespace deepinfer::kv {

void lru_ttl_policy::victims(const block_catalog& catalog, uint64_t bytes_to_free,
                             std::vector<block_key>& out) const {
  uint64_t freed = 0;
  catalog.for_each_lru([&](const block_meta& meta, bool held) {
    if (freed >= bytes_to_free)
      return false;
    if (!held) {
      out.push_back(meta.key);
      freed += meta.bytes;
    }
    return true;
  });
}

void lru_ttl_policy::expired(const block_catalog& catalog, int64_t now_ms,
                             std::vector<block_key>& out) const {
  // The LRU order is the order of last use, so the walk stops at the first block that even the
  // shortest TTL keeps alive: expiry costs O(expired), not O(catalog).
  const int64_t shortest = cfg_.ttl.shortest();
  catalog.for_each_lru([&](const block_meta& meta, bool held) {
    if (meta.last_use_ms + shortest > now_ms)
      return false;
    if (!held && meta.last_use_ms + cfg_.ttl.of(meta.cls) <= now_ms)
      out.push_back(meta.key);
    return true;
  });
}

} // namespace deepinfer::kv
