#include "actors/control/live_instances.hpp"

#include <algorithm>

namespace deepinfer::actors {

std::vector<live_instance> live_instances(const membership_view& view, node_role role) {
  std::vector<live_instance> out;
  for (auto& inst : view.instances) {
    if (inst.role != role || inst.state != instance_state::running || !inst.supervisor
        || inst.healthy_ranks == 0 || inst.ranks.size() != inst.healthy_ranks)
      continue;
    auto node = std::find_if(view.nodes.begin(), view.nodes.end(),
                             [&](const node_status& n) { return n.info.name == inst.node; });
    if (node == view.nodes.end() || node->state != node_state::alive)
      continue;
    std::optional<balancers::cost_model> cost;
    if (inst.prefill_cost != balancers::cost_model::config{})
      cost.emplace(inst.prefill_cost);
    out.push_back({inst.instance, inst.node, inst.supervisor, inst.healthy_ranks, node->info.rdma, inst.ranks,
                   inst.kv_tokens_per_rank, std::move(cost)});
  }
  return out;
}

} // namespace deepinfer::actors
