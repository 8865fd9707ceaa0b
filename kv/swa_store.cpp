#include "kv/swa_store.hpp"

namespace deepinfer::kv {

swa_store::swa_store(const config& cfg) : cfg_(cfg) {
  // nop
}

void swa_store::drop(std::unordered_map<block_key, lru_list::iterator, block_key_hash>::iterator it) {
  bytes_ -= it->second->data->size();
  lru_.erase(it->second);
  index_.erase(it);
}

bool swa_store::put(const block_key& key, std::vector<std::byte> snapshot) {
  if (snapshot.size() > cfg_.memory_cap_bytes)
    return false;
  const auto size = snapshot.size();
  auto data = std::make_shared<const std::vector<std::byte>>(std::move(snapshot));
  std::lock_guard guard{mtx_};
  if (auto it = index_.find(key); it != index_.end())
    drop(it);
  while (!lru_.empty() && bytes_ + size > cfg_.memory_cap_bytes)
    drop(index_.find(lru_.back().key));
  lru_.push_front(entry{key, std::move(data), cfg_.time->now_ms()});
  index_.emplace(key, lru_.begin());
  bytes_ += size;
  return true;
}

swa_snapshot swa_store::get(const block_key& key) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  if (it == index_.end())
    return nullptr;
  if (it->second->stored_ms + cfg_.ttl_ms <= cfg_.time->now_ms()) {
    drop(it);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->data;
}

bool swa_store::contains(const block_key& key) const {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  return it != index_.end() && it->second->stored_ms + cfg_.ttl_ms > cfg_.time->now_ms();
}

bool swa_store::erase(const block_key& key) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  if (it == index_.end())
    return false;
  drop(it);
  return true;
}

std::size_t swa_store::expire() {
  std::lock_guard guard{mtx_};
  const auto now = cfg_.time->now_ms();
  std::size_t n = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->stored_ms + cfg_.ttl_ms <= now) {
      drop(index_.find(it->key));
      ++n;
    }
    it = next;
  }
  return n;
}

std::size_t swa_store::size() const {
  std::lock_guard guard{mtx_};
  return index_.size();
}

uint64_t swa_store::bytes() const {
  std::lock_guard guard{mtx_};
  return bytes_;
}

} // namespace deepinfer::kv
