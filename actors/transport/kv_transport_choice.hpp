#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "actors/names.hpp"

namespace deepinfer::actors {

/// How a node may move KV between processes (manifest `kv_transport`, flag `--kv-transport`).
/// `automatic` uses RDMA wherever both nodes have it and CAF messages elsewhere; `caf_message`
/// never uses RDMA; `rdma` makes a node without a working RDMA listener refuse to start, and
/// still sends to peers without RDMA as CAF messages. Ranks in one process always hand over in
/// process, whatever the mode.
enum class kv_transport_mode : uint8_t { automatic, caf_message, rdma };

/// `auto`, `caf_message` or `rdma`; nullopt for anything else.
std::optional<kv_transport_mode> parse_kv_transport_mode(std::string_view text);

/// The manifest spelling of `m`.
const char* to_string(kv_transport_mode m);

/// The transports `decide_kv_transport` chooses between: kv_transport_kind (actors/names.hpp).

/// Everything the choice for one prefill -> decode pair depends on, gathered by the caller so the
/// decision itself is a pure function (tested without a device).
struct kv_transport_facts {
  /// Both ranks live in this process.
  bool same_process = false;
  kv_transport_mode mode = kv_transport_mode::automatic;
  /// This build has the verbs data path (libibverbs and librdmacm were found).
  bool rdma_compiled = false;
  /// RDMA devices this process sees.
  int rdma_devices = 0;
  /// This node's RDMA listener runs (the decode side reads from it).
  bool rdma_listening = false;
  /// The decode node advertises an RDMA endpoint in its node_info.
  bool peer_rdma = false;
};

/// in_process for the same process; rdma only when compiled in, a device and the listener exist
/// here, the peer advertises RDMA and the mode allows it; caf_message otherwise.
kv_transport_kind decide_kv_transport(const kv_transport_facts& facts);

} // namespace deepinfer::actors
