#include "kv/swa_directory_shard.hpp"

namespace deepinfer::kv {

void swa_directory_shard::record(const block_key& key, node_id owner, int64_t expires_ms) {
  entries_[key] = entry{owner, expires_ms};
}

std::optional<node_id> swa_directory_shard::lookup(const block_key& key, int64_t now_ms) {
  auto it = entries_.find(key);
  if (it == entries_.end())
    return std::nullopt;
  if (it->second.expires_ms <= now_ms) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second.owner;
}

bool swa_directory_shard::forget(const block_key& key) {
  return entries_.erase(key) > 0;
}

std::size_t swa_directory_shard::forget_node(node_id owner) {
  return std::erase_if(entries_, [&](const auto& kv) { return kv.second.owner == owner; });
}

std::size_t swa_directory_shard::expire(int64_t now_ms) {
  return std::erase_if(entries_, [&](const auto& kv) { return kv.second.expires_ms <= now_ms; });
}

} // namespace deepinfer::kv
