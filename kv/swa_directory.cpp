#include "kv/swa_directory.hpp"

namespace deepinfer::kv {

swa_directory::swa_directory(const config& cfg) : cfg_(cfg), ring_(cfg.ring) {
  for (uint32_t i = 0; i < cfg_.shards; ++i) {
    ring_.add(shard_id{i});
    shards_.emplace(shard_id{i}, swa_directory_shard{});
  }
}

std::optional<shard_id> swa_directory::shard_for(const block_key& key) const {
  std::lock_guard guard{mtx_};
  return ring_.owner(key);
}

void swa_directory::record(const block_key& key, node_id owner) {
  std::lock_guard guard{mtx_};
  if (auto shard = ring_.owner(key))
    shards_[*shard].record(key, owner, cfg_.time->now_ms() + cfg_.ttl_ms);
}

swa_location swa_directory::lookup(const block_key& key, node_id asker) {
  std::lock_guard guard{mtx_};
  auto shard = ring_.owner(key);
  if (!shard)
    return {};
  auto owner = shards_[*shard].lookup(key, cfg_.time->now_ms());
  if (!owner)
    return {};
  return {*owner == asker ? swa_where::local : swa_where::remote, owner};
}

bool swa_directory::forget(const block_key& key) {
  std::lock_guard guard{mtx_};
  auto shard = ring_.owner(key);
  return shard && shards_[*shard].forget(key);
}

std::size_t swa_directory::forget_node(node_id owner) {
  std::lock_guard guard{mtx_};
  std::size_t n = 0;
  for (auto& [id, shard] : shards_)
    n += shard.forget_node(owner);
  return n;
}

bool swa_directory::add_shard(shard_id shard) {
  std::lock_guard guard{mtx_};
  if (!ring_.add(shard))
    return false;
  shards_.emplace(shard, swa_directory_shard{});
  return true;
}

bool swa_directory::remove_shard(shard_id shard) {
  std::lock_guard guard{mtx_};
  if (!ring_.remove(shard))
    return false;
  shards_.erase(shard);
  return true;
}

std::size_t swa_directory::size() const {
  std::lock_guard guard{mtx_};
  std::size_t n = 0;
  for (const auto& [id, shard] : shards_)
    n += shard.size();
  return n;
}

std::size_t swa_directory::shard_size(shard_id shard) const {
  std::lock_guard guard{mtx_};
  auto it = shards_.find(shard);
  return it == shards_.end() ? 0 : it->second.size();
}

} // namespace deepinfer::kv
