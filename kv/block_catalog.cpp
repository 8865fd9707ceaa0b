#include "kv/block_catalog.hpp"

#include "kv/log.hpp"
#include "recipe/base/assert.hpp"

#include <cstdlib>

namespace deepinfer::kv {

block_catalog::lease& block_catalog::lease::operator=(lease&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    key_ = other.key_;
    other.owner_ = nullptr;
  }
  return *this;
}

void block_catalog::lease::reset() {
  if (owner_ != nullptr) {
    owner_->release(key_);
    owner_ = nullptr;
  }
}

bool block_catalog::insert(const block_meta& meta) {
  std::lock_guard guard{mtx_};
  if (auto it = index_.find(meta.key); it != index_.end()) {
    auto& e = *it->second;
    if (meta.last_use_ms > e.meta.last_use_ms)
      e.meta.last_use_ms = meta.last_use_ms;
    lru_.splice(lru_.begin(), lru_, it->second);
    return false;
  }
  lru_.push_front(entry{meta});
  index_.emplace(meta.key, lru_.begin());
  bytes_ += meta.bytes;
  return true;
}

bool block_catalog::touch(const block_key& key, int64_t now_ms) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  if (it == index_.end())
    return false;
  if (now_ms > it->second->meta.last_use_ms)
    it->second->meta.last_use_ms = now_ms;
  lru_.splice(lru_.begin(), lru_, it->second);
  return true;
}

std::optional<block_meta> block_catalog::find(const block_key& key) const {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  if (it == index_.end())
    return std::nullopt;
  return it->second->meta;
}

block_catalog::lease block_catalog::acquire(const block_key& key) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  if (it == index_.end() || it->second->removing)
    return {};
  ++it->second->pins;
  return lease{this, key};
}

void block_catalog::release(const block_key& key) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  // A pin outlived its entry: removal ignored a pin, which must never happen.
  DEEPINFER_ASSERT(it != index_.end() && it->second->pins > 0, "block={} unpinned but not pinned", key.to_hex());
  --it->second->pins;
}

bool block_catalog::begin_remove(const block_key& key) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  if (it == index_.end() || it->second->pins > 0 || it->second->removing)
    return false;
  it->second->removing = true;
  return true;
}

void block_catalog::end_remove(const block_key& key, bool removed) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  if (it == index_.end())
    return;
  if (!removed) {
    it->second->removing = false;
    return;
  }
  bytes_ -= it->second->meta.bytes;
  lru_.erase(it->second);
  index_.erase(it);
}

void block_catalog::forget(const block_key& key) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key);
  if (it == index_.end() || it->second->pins > 0 || it->second->removing)
    return;
  bytes_ -= it->second->meta.bytes;
  lru_.erase(it->second);
  index_.erase(it);
}

void block_catalog::for_each_lru(
  const std::function<bool(const block_meta& meta, bool held)>& fn) const {
  std::lock_guard guard{mtx_};
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it)
    if (!fn(it->meta, it->pins > 0 || it->removing))
      return;
}

uint64_t block_catalog::bytes() const {
  std::lock_guard guard{mtx_};
  return bytes_;
}

std::size_t block_catalog::size() const {
  std::lock_guard guard{mtx_};
  return index_.size();
}

} // namespace deepinfer::kv
