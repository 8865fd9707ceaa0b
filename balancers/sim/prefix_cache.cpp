#include "balancers/sim/prefix_cache.hpp"

#include <algorithm>
#include <cstring>

namespace deepinfer::balancers::sim {

struct prefix_cache::node {
  std::vector<uint64_t> keys;
  std::unordered_map<uint64_t, std::unique_ptr<node>> children;
  node* parent = nullptr;
  double last_use = 0.0;
};

namespace {

// Length of the common prefix of a and b (n entries each, the first known equal). Runs of a whole
// agent turn are equal, so one memcmp settles most calls.
size_t common_prefix(const uint64_t* a, const uint64_t* b, size_t n) {
  if (std::memcmp(a, b, n * sizeof(uint64_t)) == 0)
    return n;
  size_t m = 1;
  while (m < n && a[m] == b[m])
    ++m;
  return m;
}

} // namespace

prefix_cache::prefix_cache(const config& cfg) : cfg_(cfg), root_(std::make_unique<node>()) {}

prefix_cache::~prefix_cache() = default;

void prefix_cache::drop_subtree(node* n) {
  std::vector<node*> stack{n};
  while (!stack.empty()) {
    node* x = stack.back();
    stack.pop_back();
    size_ -= static_cast<int64_t>(x->keys.size());
    for (auto& [k, ch] : x->children)
      stack.push_back(ch.get());
  }
}

prefix_cache::node* prefix_cache::child(node* parent, uint64_t key, double now) {
  const auto it = parent->children.find(key);
  if (it == parent->children.end())
    return nullptr;
  node* c = it->second.get();
  if (c->last_use + cfg_.ttl_s < now) {
    // Expired: drop the whole subtree (descendants are never fresher than their parent).
    drop_subtree(c);
    parent->children.erase(it);
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
    const size_t m = common_prefix(c->keys.data(), chain.data() + i, room);
    // A mismatch inside a node splits it so exactly the matched part is refreshed; a chain that
    // merely ends inside a node refreshes the whole node (no split: saves a node per lookup).
    if (m < room)
      split(c, m);
    c->last_use = now;
    i += m;
    if (m < room || c->keys.size() > m)
      break;
    at = c;
  }
  // Ancestors were refreshed on the way down: parents stay at least as fresh as children.
  return static_cast<int64_t>(i);
}

void prefix_cache::insert(std::span<const uint64_t> chain, double now) {
  node* at = root_.get();
  size_t i = 0;
  while (i < chain.size()) {
    node* c = child(at, chain[i], now);
    if (!c && at != root_.get() && at->children.empty()) {
      // Extend a fully matched leaf in place: an agent session stays one node however many turns
      // it runs, which keeps lookups a few pointer hops deep.
      at->keys.insert(at->keys.end(), chain.begin() + static_cast<std::ptrdiff_t>(i), chain.end());
      size_ += static_cast<int64_t>(chain.size() - i);
      break;
    }
    if (!c) {
      auto fresh = std::make_unique<node>();
      fresh->keys.assign(chain.begin() + static_cast<std::ptrdiff_t>(i), chain.end());
      fresh->parent = at;
      fresh->last_use = now;
      size_ += static_cast<int64_t>(fresh->keys.size());
      at->children.emplace(chain[i], std::move(fresh));
      break;
    }
    const size_t room = std::min(c->keys.size(), chain.size() - i);
    const size_t m = common_prefix(c->keys.data(), chain.data() + i, room);
    if (m < c->keys.size() && m < chain.size() - i)
      split(c, m);
    c->last_use = now;
    i += m;
    at = c;
  }
  if (size_ > cfg_.capacity_blocks)
    evict(now);
}

void prefix_cache::remove_leaf(node* n) {
  size_ -= static_cast<int64_t>(n->keys.size());
  n->parent->children.erase(n->keys.front());
}

void prefix_cache::evict(double now) {
  // Batch LRU: collect the leaves, drop the oldest (expired ones first by age) until 90 % of the
  // capacity; a leaf larger than what is left to free loses only its tail. Repeats if removing
  // leaves exposed new ones and the target is not reached yet.
  const int64_t target = cfg_.capacity_blocks - cfg_.capacity_blocks / 10;
  while (size_ > target) {
    std::vector<node*> leaves;
    std::vector<node*> stack{root_.get()};
    while (!stack.empty()) {
      node* x = stack.back();
      stack.pop_back();
      if (x != root_.get() && x->children.empty())
        leaves.push_back(x);
      for (auto& [k, ch] : x->children)
        stack.push_back(ch.get());
    }
    if (leaves.empty())
      return;
    std::sort(leaves.begin(), leaves.end(), [](const node* a, const node* b) { return a->last_use < b->last_use; });
    for (node* n : leaves) {
      const int64_t excess = size_ - target;
      if (excess <= 0 && n->last_use + cfg_.ttl_s >= now)
        break;
      if (static_cast<int64_t>(n->keys.size()) > excess && n->last_use + cfg_.ttl_s >= now) {
        n->keys.resize(n->keys.size() - static_cast<size_t>(excess));
        size_ -= excess;
      } else {
        remove_leaf(n);
      }
    }
  }
}

} // namespace deepinfer::balancers::sim
