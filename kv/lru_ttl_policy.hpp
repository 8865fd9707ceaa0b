#pragma once

#include "kv/eviction_policy.hpp"
#include "kv/traffic_class.hpp"

namespace deepinfer::kv {

/// The default policy: evict least recently used first; expire a block when its class's TTL
/// has passed since its last use (agent 3 days, chatbot 7 days by default).
class lru_ttl_policy final : public eviction_policy {
public:
  /// TTLs per traffic class.
  struct config {
    ttl_table ttl;
  };

  lru_ttl_policy() = default;

  /// A policy with custom TTLs.
  explicit lru_ttl_policy(const config& cfg) : cfg_(cfg) {
    // nop
  }

  void victims(const block_catalog& catalog, uint64_t bytes_to_free,
               std::vector<block_key>& out) const override;

  void expired(const block_catalog& catalog, int64_t now_ms, std::vector<block_key>& out) const override;

private:
  config cfg_;
};

} // namespace deepinfer::kv
