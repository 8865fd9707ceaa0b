#pragma once

// The enums that travel in messages instead of strings, and their names. Names are rendered only
// at the edges: logs, metrics labels, manifests, `/status`.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>
#include <optional>
#include <string_view>

namespace deepinfer::actors {

/// The roles a node can play (DESIGN §3); an instance's role is prefill, decode or vision.
/// `pool`: a ready-pool node (issue 17, DESIGN §6.5) that starts, joins and waits unassigned
/// until the controller's autoscaler makes it a prefill or decode instance (the prefill /
/// decode roles listed next to `pool` are then what it may become; none listed: either).
/// `so`: a structured-output compiler node (issue 19, DESIGN §5.3): entrypoints compile their
/// requests' constraints there, off the serving nodes.
enum class node_role : uint8_t { entrypoint, prefill, decode, vision, kvstore, controller, pool, so };

/// Every role, in manifest order.
inline constexpr std::array all_node_roles{node_role::entrypoint, node_role::prefill, node_role::decode,
                                           node_role::vision,     node_role::kvstore, node_role::controller,
                                           node_role::pool,       node_role::so};

/// The manifest spelling of `r` (`entrypoint`, `prefill`, ...).
const char* to_string(node_role r);

/// The role spelled `text`; nullopt for anything else.
std::optional<node_role> parse_node_role(std::string_view text);

/// The roles of one node, one bit per role (compact on the wire: node_info::roles; 8 roles fit).
struct role_set {
  uint8_t bits = 0;

  role_set() = default;
  role_set(std::initializer_list<node_role> roles) {
    for (auto r : roles)
      add(r);
  }
  explicit role_set(const std::vector<node_role>& roles) {
    for (auto r : roles)
      add(r);
  }
  void add(node_role r) { bits = static_cast<uint8_t>(bits | (1u << static_cast<unsigned>(r))); }
  bool has(node_role r) const { return (bits >> static_cast<unsigned>(r)) & 1u; }
  std::size_t size() const { return static_cast<std::size_t>(std::popcount(bits)); }
  friend bool operator==(const role_set&, const role_set&) = default;
};

/// How a prefilled sequence's KV moves to its decode rank (actors/transport/kv_transport.hpp).
enum class kv_transport_kind : uint8_t { in_process, caf_message, rdma };

/// `in_process`, `caf_message` or `rdma` (the metrics label).
const char* to_string(kv_transport_kind k);

} // namespace deepinfer::actors
