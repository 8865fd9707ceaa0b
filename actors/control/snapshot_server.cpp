#include "actors/control/snapshot_server.hpp"

#include <cstring>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace deepinfer::actors {

snapshot_server_actor spawn_snapshot_server(caf::actor_system& sys, snapshot_reader read) {
  return sys.spawn([read = std::move(read)]() -> snapshot_server_actor::behavior_type {
    return {
      [read](swa_fetch_atom, const kv::block_key& key) -> byte_payload {
        byte_payload out;
        if (auto bytes = read(key)) {
          out.bytes.resize(bytes->size());
          std::memcpy(out.bytes.data(), bytes->data(), bytes->size());
        }
        return out;
      },
    };
  });
}

} // namespace deepinfer::actors
