#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/messages.hpp"

namespace deepinfer::actors {

/// An instance that can take requests now, as the membership view shows it.
struct live_instance {
  std::string name;
  std::string node;
  /// Its supervisor (hands out rank handles with `get`).
  caf::strong_actor_ptr supervisor;
  /// Healthy ranks of the current generation.
  uint32_t ranks = 0;
  /// The node's RDMA KV endpoint (node_info::rdma); empty: none.
  std::string rdma;
  /// The ranks' handles, index = rank (`ranks` of them).
  std::vector<caf::strong_actor_ptr> rank_handles;
  /// KV tokens one rank's pool holds.
  int64_t kv_tokens_per_rank = 0;
  /// Prefill: the cost model of its engine (instance_status::prefill_cost; nullopt: not known).
  std::optional<balancers::cost_model> prefill_cost;
};

/// The running instances of `role` on alive nodes, in view order (deterministic placement).
std::vector<live_instance> live_instances(const membership_view& view, node_role role);

} // namespace deepinfer::actors
