#include "actors/control/pool_scaler.hpp"

#include <algorithm>

namespace deepinfer::actors {

namespace {

bool alive(const membership_view& view, const std::string& node) {
  return std::any_of(view.nodes.begin(), view.nodes.end(), [&](const node_status& n) {
    return n.info.name == node && n.state == node_state::alive;
  });
}

/// An instance that serves or soon will: a restarting one comes back on its own.
bool serving_state(instance_state s) {
  return s == instance_state::starting || s == instance_state::running || s == instance_state::restarting;
}

} // namespace

bool pool_scaler::may_take(const node_info& n, node_role role) {
  if (!n.roles.has(node_role::pool))
    return false;
  const bool restricted = n.roles.has(node_role::prefill) || n.roles.has(node_role::decode);
  return !restricted || n.roles.has(role);
}

pool_scaler::counts pool_scaler::count(const membership_view& view) const {
  counts c;
  for (auto& i : view.instances) {
    if (i.role != node_role::prefill && i.role != node_role::decode)
      continue;
    if (!alive(view, i.node))
      continue;
    const auto a = assigned_.find(i.node);
    const bool pooled = a != assigned_.end();
    if (i.role == node_role::prefill && i.state == instance_state::running
        && (!pooled || a->second.state != phase::leaving))
      c.prefill_ranks += i.healthy_ranks;
    // A pool node's instance is counted through its assignment (below), which exists before
    // the instance reports and goes on counting while it loads.
    if (pooled || !serving_state(i.state))
      continue;
    (i.role == node_role::prefill ? c.prefill : c.decode) += 1;
    if (i.state != instance_state::running)
      (i.role == node_role::prefill ? c.prefill_starting : c.decode_starting) += 1;
  }
  for (auto& [node, a] : assigned_) {
    if (a.state == phase::leaving || !alive(view, node))
      continue;
    (a.role == node_role::prefill ? c.prefill : c.decode) += 1;
    const bool runs = std::any_of(view.instances.begin(), view.instances.end(), [&](const instance_status& i) {
      return i.node == node && i.role == a.role && i.state == instance_state::running;
    });
    if (!runs)
      (a.role == node_role::prefill ? c.prefill_starting : c.decode_starting) += 1;
  }
  for (auto& n : view.nodes)
    if (n.state == node_state::alive && n.info.roles.has(node_role::pool) && !assigned_.count(n.info.name))
      ++c.idle_pool;
  return c;
}

void pool_scaler::reconcile(const membership_view& view) {
  for (auto& i : view.instances) {
    if (i.role != node_role::prefill && i.role != node_role::decode)
      continue;
    auto node = std::find_if(view.nodes.begin(), view.nodes.end(),
                             [&](const node_status& n) { return n.info.name == i.node; });
    if (node == view.nodes.end() || node->state != node_state::alive || !node->info.roles.has(node_role::pool))
      continue;
    auto a = assigned_.find(i.node);
    if (a == assigned_.end()) {
      if (serving_state(i.state))
        assigned_[i.node] = {i.role, phase::serving, next_order_++};
      else if (i.state == instance_state::draining)
        assigned_[i.node] = {i.role, phase::leaving, next_order_++};
    } else if (a->second.state == phase::leaving && a->second.role == i.role && i.state == instance_state::stopped) {
      assigned_.erase(a);
    }
  }
}

pool_scaler::plan_result pool_scaler::plan(const membership_view& view, int prefill_target, int decode_target) {
  plan_result out;
  reconcile(view);
  const auto now = count(view);
  for (auto [role, have, target] : {std::tuple{node_role::prefill, now.prefill, prefill_target},
                                    std::tuple{node_role::decode, now.decode, decode_target}}) {
    if (target > have) {
      std::vector<const node_info*> idle;
      for (auto& n : view.nodes)
        if (n.state == node_state::alive && may_take(n.info, role) && !assigned_.count(n.info.name))
          idle.push_back(&n.info);
      std::sort(idle.begin(), idle.end(), [](auto* a, auto* b) { return a->name < b->name; });
      int added = 0;
      for (auto* n : idle) {
        if (have + added >= target)
          break;
        assigned_[n->name] = {role, phase::starting, next_order_++};
        out.actions.push_back({action::kind::assign, n->name, role});
        ++added;
      }
      if (have + added < target)
        out.waiting.push_back(role);
    } else if (target < have) {
      std::vector<std::pair<uint64_t, std::string>> serving;
      for (auto& [node, a] : assigned_)
        if (a.role == role && a.state == phase::serving && alive(view, node))
          serving.emplace_back(a.order, node);
      std::sort(serving.rbegin(), serving.rend());
      for (int k = 0; k < have - target && k < static_cast<int>(serving.size()); ++k) {
        assigned_[serving[k].second].state = phase::leaving;
        out.actions.push_back({action::kind::release, serving[k].second, role});
      }
    }
  }
  return out;
}

void pool_scaler::assigned(const std::string& node, bool ok) {
  auto it = assigned_.find(node);
  if (it == assigned_.end() || it->second.state != phase::starting)
    return;
  if (ok)
    it->second.state = phase::serving;
  else
    assigned_.erase(it);
}

void pool_scaler::released(const std::string& node) {
  assigned_.erase(node);
}

void pool_scaler::forget(const std::string& node) {
  assigned_.erase(node);
}

const pool_scaler::assignment* pool_scaler::find(const std::string& node) const {
  auto it = assigned_.find(node);
  return it == assigned_.end() ? nullptr : &it->second;
}

const char* to_string(pool_scaler::phase p) {
  switch (p) {
    case pool_scaler::phase::starting: return "starting";
    case pool_scaler::phase::serving: return "serving";
    case pool_scaler::phase::leaving: return "leaving";
  }
  return "unknown";
}

} // namespace deepinfer::actors
