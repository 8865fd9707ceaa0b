#include "actors/control/membership.hpp"

#include <algorithm>
#include <tuple>

namespace deepinfer::actors {

membership::membership(clock_fn clock) : clock_(std::move(clock)) {
  // nop
}

node_status* membership::find(const std::string& name) {
  auto i = std::find_if(view_.nodes.begin(), view_.nodes.end(),
                        [&](const node_status& n) { return n.info.name == name; });
  return i == view_.nodes.end() ? nullptr : &*i;
}

uint32_t membership::join(const node_info& info) {
  ++view_.version;
  if (auto* n = find(info.name)) {
    n->info = info;
    n->state = node_state::alive;
    n->since_ms = clock_();
    n->reason.clear();
    return ++n->joins;
  }
  view_.nodes.push_back({info, node_state::alive, clock_(), {}, 1});
  return 1;
}

bool membership::mark_dead(const std::string& name, uint64_t incarnation, std::string reason) {
  auto* n = find(name);
  if (n == nullptr || n->info.incarnation != incarnation || n->state != node_state::alive)
    return false;
  ++view_.version;
  n->state = node_state::dead;
  n->since_ms = clock_();
  n->reason = std::move(reason);
  // A dead node's instances are gone with it: keep their last status but mark them stopped so a
  // reader never mistakes them for capacity.
  for (auto& inst : view_.instances)
    if (inst.node == name)
      inst.state = instance_state::failed;
  return true;
}

bool membership::mark_left(const std::string& name) {
  auto* n = find(name);
  if (n == nullptr || n->state == node_state::left)
    return false;
  ++view_.version;
  n->state = node_state::left;
  n->since_ms = clock_();
  n->reason = "left";
  for (auto& inst : view_.instances)
    if (inst.node == name)
      inst.state = instance_state::stopped;
  return true;
}

bool membership::report(const instance_status& status) {
  auto same = [](const instance_status& a, const instance_status& b) {
    return std::tie(a.node, a.role, a.configured_ranks, a.healthy_ranks, a.generation, a.state,
                    a.last_failure, a.supervisor, a.ranks, a.kv_tokens_per_rank, a.prefill_cost)
           == std::tie(b.node, b.role, b.configured_ranks, b.healthy_ranks, b.generation, b.state,
                       b.last_failure, b.supervisor, b.ranks, b.kv_tokens_per_rank, b.prefill_cost);
  };
  auto i = std::find_if(view_.instances.begin(), view_.instances.end(),
                        [&](const instance_status& s) { return s.instance == status.instance; });
  if (i == view_.instances.end()) {
    view_.instances.push_back(status);
  } else if (same(*i, status)) {
    return false;
  } else {
    *i = status;
  }
  ++view_.version;
  return true;
}

bool membership::set_balancers(caf::strong_actor_ptr prefill, caf::strong_actor_ptr decode) {
  if (view_.prefill_balancer == prefill && view_.decode_balancer == decode)
    return false;
  view_.prefill_balancer = std::move(prefill);
  view_.decode_balancer = std::move(decode);
  ++view_.version;
  return true;
}

std::optional<node_status> membership::node(const std::string& name) const {
  for (auto& n : view_.nodes)
    if (n.info.name == name)
      return n;
  return std::nullopt;
}

const char* to_string(node_state x) {
  switch (x) {
    case node_state::alive: return "alive";
    case node_state::dead: return "dead";
    case node_state::left: return "left";
  }
  return "unknown";
}

const char* to_string(instance_state x) {
  switch (x) {
    case instance_state::starting: return "starting";
    case instance_state::running: return "running";
    case instance_state::restarting: return "restarting";
    case instance_state::failed: return "failed";
    case instance_state::stopped: return "stopped";
    case instance_state::draining: return "draining";
  }
  return "unknown";
}

} // namespace deepinfer::actors
