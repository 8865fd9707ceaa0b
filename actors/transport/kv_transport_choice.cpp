#include "actors/transport/kv_transport_choice.hpp"

namespace deepinfer::actors {

std::optional<kv_transport_mode> parse_kv_transport_mode(std::string_view text) {
  if (text == "auto")
    return kv_transport_mode::automatic;
  if (text == "caf_message")
    return kv_transport_mode::caf_message;
  if (text == "rdma")
    return kv_transport_mode::rdma;
  return std::nullopt;
}

const char* to_string(kv_transport_mode m) {
  switch (m) {
    case kv_transport_mode::automatic:
      return "auto";
    case kv_transport_mode::caf_message:
      return "caf_message";
    case kv_transport_mode::rdma:
      return "rdma";
  }
  return "auto";
}

kv_transport_kind decide_kv_transport(const kv_transport_facts& f) {
  if (f.same_process)
    return kv_transport_kind::in_process;
  bool rdma_here = f.rdma_compiled && f.rdma_devices > 0 && f.rdma_listening;
  if (f.mode != kv_transport_mode::caf_message && rdma_here && f.peer_rdma)
    return kv_transport_kind::rdma;
  return kv_transport_kind::caf_message;
}

} // namespace deepinfer::actors
