#include "engine/ep/ep_group.hpp"

#include "engine/ep/expert_replacement.hpp"
#include "engine/log.hpp"

namespace deepinfer::engine {

ep_group::ep_group(const model_config& model, const config& cfg) : domain_(cfg.ranks), signal_(cfg.ranks) {
  const int layers = model.encoder_layers + model.decoder_layers;
  auto placement = place_experts(layers, model.routed_experts, cfg.ranks,
                                 cfg.settings.redundant_per_rank, cfg.initial_load);
  for (int r = 0; r < cfg.ranks; ++r)
    ranks_.push_back(std::make_unique<ep_rank>(model, cfg.settings, placement, domain_.transport(r),
                                               domain_.mover(r), &signal_));
  log().info("ep group ranks={} slots_per_rank={} experts={} layers={} redundant_per_rank={}",
             cfg.ranks, placement.slots_per_rank(), model.routed_experts, layers,
             cfg.settings.redundant_per_rank);
}

ep_group::~ep_group() = default;

} // namespace deepinfer::engine
