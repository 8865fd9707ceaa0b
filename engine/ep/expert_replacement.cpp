// The glue between the EP group and the balancers' placement policy (DESIGN §6.4): engine/ links
// balancers/ (plain C++, no CAF; balancers/ does not depend on engine/), so the policy stays one
// synchronous class the simulator and the engine both run.
#include "engine/ep/expert_replacement.hpp"

#include "balancers/ep_placer.hpp"

namespace deepinfer::engine {

expert_placement place_experts(int layers, int experts, int ranks, int redundant_per_rank,
                               const std::vector<std::vector<double>>& load,
                               const expert_placement* current) {
  balancers::ep_placer::config pc;
  pc.experts = experts;
  pc.ranks = ranks;
  pc.redundant_per_rank = redundant_per_rank;
  pc.interval = 1 << 30; // the group decides when; the placer only places
  balancers::ep_placer placer(pc);
  expert_placement out(layers, experts, ranks, placer.slots_per_rank());
  const bool keep = current != nullptr && current->ranks() == ranks &&
                    current->slots_per_rank() == placer.slots_per_rank() &&
                    current->layers() == layers && current->experts() == experts;
  for (int l = 0; l < layers; ++l) {
    if (static_cast<int>(load.size()) > l)
      placer.place(load[static_cast<std::size_t>(l)]);
    else
      placer.place(std::vector<double>(static_cast<std::size_t>(experts), 1.0));
    out.set_layer(l, keep ? current->keep_in_place(l, placer.slots()) : placer.slots());
  }
  return out;
}

} // namespace deepinfer::engine
