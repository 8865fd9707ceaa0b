#pragma once

#include <cstdint>
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
};

/// The running instances of `role` on alive nodes, in view order (deterministic placement).
std::vector<live_instance> live_instances(const membership_view& view, node_role role);

/// The index of the entry for (instance, rank) in a routers' load table (entries with `instance`
/// and `rank` members), appending a fresh one first seen. Entries are never removed, so a lease
/// keeps its index for as long as it lives.
template <class Slot>
std::size_t slot_index(std::vector<Slot>& slots, const std::string& instance, uint32_t rank) {
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].instance == instance && slots[i].rank == rank)
      return i;
  Slot fresh{};
  fresh.instance = instance;
  fresh.rank = rank;
  slots.push_back(std::move(fresh));
  return slots.size() - 1;
}

} // namespace deepinfer::actors
