#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include <caf/actor_addr.hpp>

namespace deepinfer::actors {

/// The keys each requester (a request actor) holds at a balancer, so that its DOWN releases all
/// of them even when its own `release` never comes.
class requester_keys {
public:
  /// Records `key` for `requester`; true when the requester is new (the caller monitors it).
  bool add(const caf::actor_addr& requester, uint64_t key) {
    auto& keys = held_[requester];
    const bool fresh = keys.empty();
    keys.insert(key);
    owner_[key] = requester;
    return fresh;
  }

  /// Forgets `key`; returns its requester when that holds nothing more (the caller demonitors).
  std::optional<caf::actor_addr> remove(uint64_t key) {
    auto o = owner_.find(key);
    if (o == owner_.end())
      return std::nullopt;
    auto requester = o->second;
    owner_.erase(o);
    auto h = held_.find(requester);
    if (h == held_.end())
      return std::nullopt;
    h->second.erase(key);
    if (!h->second.empty())
      return std::nullopt;
    held_.erase(h);
    return requester;
  }

  bool owns(uint64_t key) const { return owner_.count(key) > 0; }

  /// The keys `requester` holds now (a copy: releasing them edits this table).
  std::vector<uint64_t> keys_of(const caf::actor_addr& requester) const {
    auto h = held_.find(requester);
    return h == held_.end() ? std::vector<uint64_t>{} : std::vector<uint64_t>(h->second.begin(), h->second.end());
  }

private:
  std::map<caf::actor_addr, std::set<uint64_t>> held_;
  std::unordered_map<uint64_t, caf::actor_addr> owner_;
};

} // namespace deepinfer::actors
