#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "actors/interfaces.hpp"

namespace deepinfer::actors {

/// The instance supervisors a node hosts, by role: the manifest's (several of one role with
/// `caf-launch --instances`), and a pool instance while the controller has it serve. Added and
/// removed on the agent's thread, read by operator calls and signal handlers: thread-safe.
class node_instances {
public:
  void add(node_role role, instance_supervisor_actor sup) {
    std::lock_guard<std::mutex> guard{mtx_};
    by_role_.emplace(role, std::move(sup));
  }

  /// Forgets every instance of `role` (a pool instance that stopped).
  void remove(node_role role) {
    std::lock_guard<std::mutex> guard{mtx_};
    by_role_.erase(role);
  }

  /// The first instance of `role` (the one named `node/role`).
  std::optional<instance_supervisor_actor> first(node_role role) const {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = by_role_.lower_bound(role);
    if (i == by_role_.end() || i->first != role)
      return std::nullopt;
    return i->second;
  }

  /// Every instance of `role`, first to last.
  std::vector<instance_supervisor_actor> all(node_role role) const {
    std::lock_guard<std::mutex> guard{mtx_};
    std::vector<instance_supervisor_actor> out;
    for (auto [i, end] = by_role_.equal_range(role); i != end; ++i)
      out.push_back(i->second);
    return out;
  }

  /// Takes every instance out (the node stops).
  std::vector<instance_supervisor_actor> take_all() {
    std::lock_guard<std::mutex> guard{mtx_};
    std::vector<instance_supervisor_actor> out;
    for (auto& [role, sup] : by_role_)
      out.push_back(std::move(sup));
    by_role_.clear();
    return out;
  }

private:
  mutable std::mutex mtx_;
  std::multimap<node_role, instance_supervisor_actor> by_role_;
};

} // namespace deepinfer::actors
