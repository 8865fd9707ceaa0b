#include "balancers/sim/prefix_cache.hpp"

#include <algorithm>

namespace deepinfer::balancers::sim {

struct prefix_cache::node {
  std::vector<uint64_t> keys;
  std::unordered_map<uint64_t, std::unique_ptr<node>> children;
  node* parent = nullptr;
  double last_use = 0.0;
};

prefix_cache::prefix_cache(const config& cfg) : cfg_(cfg), root_(std::make_unique<node>()) {}

prefix_cache::~prefix_cache() = default;

void prefix_cache::touch(node* n, double now) {
  if (n->children.empty()) {
    leaves_.erase({n->last_use, n});
    leaves_.insert({now, n});
  }
  n->last_use = now;
}

prefix_cache::node* prefix_cache::child(node* parent, uint64_t key, double now) {
  const auto it = parent->children.find(key);
  if (it == parent->children.end())
    return nullptr;
  node* c = it->second.get();
  if (c->last_use + cfg_.ttl_s < now) {
    // Expired: drop the whole subtree (descendants are never fresher than their parent).
    std::vector<node*> stack{c};
    while (!stack.empty()) {
      node* x = stack.back();
      stack.pop_back();
      size_ -= static_cast<int64_t>(x->keys.size());
      if (x->children.empty())
        leaves_.erase({x->last_use, x});
      for (auto& [k, ch] : x->children)
        stack.push_back(ch.get());
    }
    parent->children.erase(it);
    if (parent != root_.get() && parent->children.empty())
      leaves_.insert({parent->last_use, parent});
    return nullptr;
  }
  return c;
}

prefix_cache::node* prefix_cache::split(node* n, size_t at) {
  // n keeps keys[0, at); a new child takes keys[at, end) and n's children.
  auto tail = std::make_unique<node>();
  tail->keys.assign(n->keys.begin() + static_cast<std::ptrdiff_t>(at), n->keys.end());
  n->keys.resize(at);
  tail->children = std::move(n->children);
  n->children.clear();
  for (auto& [k, ch] : tail->children)
    ch->parent = tail.get();
  tail->parent = n;
  tail->last_use = n->last_use;
  node* t = tail.get();
  if (t->children.empty()) {
    leaves_.erase({n->last_use, n});
    leaves_.insert({t->last_use, t});
  }
  n->children.emplace(t->keys.front(), std::move(tail));
  return t;
}

int64_t prefix_cache::match(std::span<const uint64_t> chain, double now) {
  node* at = root_.get();
  size_t i = 0;
  while (i < chain.size()) {
    node* c = child(at, chain[i], now);
    if (!c)
      break;
    const size_t room = std::min(c->keys.size(), chain.size() - i);
    size_t m = 1;
    while (m < room && c->keys[m] == chain[i + m])
      ++m;
    if (m < c->keys.size())
      split(c, m); // refresh exactly the matched part
    touch(c, now);
    i += m;
    if (m < room || c->keys.size() > m)
      break;
    at = c;
  }
  // Ancestors were touched on the way down: parents stay at least as fresh as children.
  return static_cast<int64_t>(i);
}

void prefix_cache::insert(std::span<const uint64_t> chain, double now) {
  node* at = root_.get();
  size_t i = 0;
  while (i < chain.size()) {
    node* c = child(at, chain[i], now);
    if (!c) {
      auto fresh = std::make_unique<node>();
      fresh->keys.assign(chain.begin() + static_cast<std::ptrdiff_t>(i), chain.end());
      fresh->parent = at;
      fresh->last_use = now;
      if (at != root_.get() && at->children.empty())
        leaves_.erase({at->last_use, at});
      leaves_.insert({now, fresh.get()});
      size_ += static_cast<int64_t>(fresh->keys.size());
      at->children.emplace(chain[i], std::move(fresh));
      break;
    }
    const size_t room = std::min(c->keys.size(), chain.size() - i);
    size_t m = 1;
    while (m < room && c->keys[m] == chain[i + m])
      ++m;
    if (m < c->keys.size())
      split(c, m);
    touch(c, now);
    i += m;
    at = c;
  }
  evict(now);
}

void prefix_cache::remove_leaf(node* n) {
  leaves_.erase({n->last_use, n});
  size_ -= static_cast<int64_t>(n->keys.size());
  node* parent = n->parent;
  parent->children.erase(n->keys.front());
  if (parent != root_.get() && parent->children.empty())
    leaves_.insert({parent->last_use, parent});
}

void prefix_cache::evict(double now) {
  // 1. expired leaves (TTL), oldest first
  while (!leaves_.empty() && leaves_.begin()->first + cfg_.ttl_s < now)
    remove_leaf(leaves_.begin()->second);
  // 2. LRU down to the capacity; a leaf larger than the excess loses only its tail
  while (size_ > cfg_.capacity_blocks && !leaves_.empty()) {
    node* n = leaves_.begin()->second;
    const int64_t excess = size_ - cfg_.capacity_blocks;
    if (static_cast<int64_t>(n->keys.size()) > excess) {
      n->keys.resize(n->keys.size() - static_cast<size_t>(excess));
      size_ -= excess;
    } else {
      remove_leaf(n);
    }
  }
}

} // namespace deepinfer::balancers::sim
