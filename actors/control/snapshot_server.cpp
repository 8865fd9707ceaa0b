#include "actors/control/snapshot_server.hpp"

#include <cstring>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/control/cluster_snapshot.hpp"
#include "actors/swa/swa_shard.hpp"
#include "kv/prefix_cache.hpp"

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

caf::strong_actor_ptr serve_snapshots(caf::actor_system& sys, const std::shared_ptr<kv::prefix_cache>& cache,
                                      std::shared_ptr<cluster_snapshot> cluster) {
  auto server = caf::actor_cast<caf::strong_actor_ptr>(
    spawn_snapshot_server(sys, [weak = std::weak_ptr<kv::prefix_cache>{cache}](const kv::block_key& k)
                                 -> std::optional<std::vector<std::byte>> {
      auto c = weak.lock();
      auto snap = c ? c->local_snapshot(k) : nullptr;
      if (!snap)
        return std::nullopt;
      return *snap;
    }));
  // Every snapshot kept here is recorded in the directory shard responsible for its key.
  cache->set_snapshot_listener([cluster = std::move(cluster), owner = caf::actor_cast<caf::actor_addr>(server)](
                                 const kv::block_key& key) {
    auto server = caf::actor_cast<caf::strong_actor_ptr>(owner);
    auto shard = server ? swa_shard_for(cluster->get().view, key) : nullptr;
    if (shard)
      caf::anon_send(caf::actor_cast<swa_shard_actor>(shard), swa_record_atom::value, key, server);
  });
  return server;
}

} // namespace deepinfer::actors
