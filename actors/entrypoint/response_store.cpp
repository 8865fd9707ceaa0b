#include "actors/entrypoint/response_store.hpp"

namespace deepinfer::actors {

namespace {

/// Length-prefixed, so no (tenant, id) pair spells another.
std::string key_of(const std::string& tenant, const std::string& id) {
  return std::to_string(tenant.size()) + ":" + tenant + id;
}

} // namespace

std::size_t footprint(const response_store::entry& e) {
  std::size_t n = e.body.size() + sizeof(e) + (e.events ? e.events->bytes() : 0);
  for (const auto& m : e.history) {
    n += sizeof(m) + m.reasoning.value_or("").size() + m.tool_call_id.size();
    for (const auto& p : m.content)
      n += sizeof(p) + p.value.size();
    for (const auto& c : m.tool_calls)
      n += sizeof(c) + c.id.size() + c.name.size() + c.arguments.size();
  }
  return n;
}

void response_store::drop(std::list<node>::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->key);
  order_.erase(it);
}

void response_store::expire(clock::time_point now) {
  while (!order_.empty() && (now - order_.front().stored >= limits_.ttl || bytes_ > limits_.max_bytes))
    drop(order_.begin());
}

void response_store::put(const std::string& tenant, const std::string& id, entry e, clock::time_point now) {
  store(tenant, id, std::move(e), now, false);
}

bool response_store::store(const std::string& tenant, const std::string& id, entry e, clock::time_point now,
                           bool only_replace) {
  const auto size = footprint(e);
  std::lock_guard guard{mtx_};
  auto key = key_of(tenant, id);
  auto it = index_.find(key);
  if (only_replace && it == index_.end())
    return false;
  if (it != index_.end())
    drop(it->second);
  if (size > limits_.max_bytes)
    return false; // larger than the whole store: kept nowhere (a GET answers 404)
  order_.push_back({key, now, size, std::make_shared<const entry>(std::move(e))});
  index_[std::move(key)] = std::prev(order_.end());
  bytes_ += size;
  expire(now);
  return true;
}

bool response_store::replace(const std::string& tenant, const std::string& id, entry e, clock::time_point now) {
  return store(tenant, id, std::move(e), now, true);
}

std::shared_ptr<const response_store::entry> response_store::get(const std::string& tenant, const std::string& id,
                                                                 clock::time_point now) {
  std::lock_guard guard{mtx_};
  expire(now);
  auto it = index_.find(key_of(tenant, id));
  return it == index_.end() ? nullptr : it->second->value;
}

bool response_store::erase(const std::string& tenant, const std::string& id) {
  std::lock_guard guard{mtx_};
  auto it = index_.find(key_of(tenant, id));
  if (it == index_.end())
    return false;
  drop(it->second);
  return true;
}

std::size_t response_store::size() const {
  std::lock_guard guard{mtx_};
  return index_.size();
}

std::size_t response_store::bytes() const {
  std::lock_guard guard{mtx_};
  return bytes_;
}

} // namespace deepinfer::actors
