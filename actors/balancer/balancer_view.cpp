#include "actors/balancer/balancer_view.hpp"

namespace deepinfer::actors {

void balancer_view::update(const membership_view& view, node_role role) {
  live_ = live_instances(view, role);
  shapes_.clear();
  for (const auto& i : live_)
    shapes_.push_back({i.name, i.ranks, i.kv_tokens_per_rank, i.prefill_cost});
}

std::optional<rank_grant> balancer_view::grant(const balancers::serving_router::rank_ref& where) const {
  for (const auto& i : live_)
    if (i.name == where.instance && where.rank < i.rank_handles.size())
      return rank_grant{i.name, where.rank, i.rank_handles[where.rank], i.rdma};
  return std::nullopt;
}

} // namespace deepinfer::actors
