#include "actors/names.hpp"

namespace deepinfer::actors {

const char* to_string(node_role r) {
  switch (r) {
    case node_role::entrypoint: return "entrypoint";
    case node_role::prefill: return "prefill";
    case node_role::decode: return "decode";
    case node_role::vision: return "vision";
    case node_role::kvstore: return "kvstore";
    case node_role::controller: return "controller";
    case node_role::pool: return "pool";
    case node_role::so: return "so";
  }
  return "unknown";
}

std::optional<node_role> parse_node_role(std::string_view text) {
  for (auto r : all_node_roles)
    if (text == to_string(r))
      return r;
  return std::nullopt;
}

const char* to_string(kv_transport_kind k) {
  switch (k) {
    case kv_transport_kind::in_process: return "in_process";
    case kv_transport_kind::caf_message: return "caf_message";
    case kv_transport_kind::rdma: return "rdma";
  }
  return "unknown";
}

} // namespace deepinfer::actors
