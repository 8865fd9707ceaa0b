#include "actors/swa/swa_shard.hpp"

#include <chrono>
#include <map>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "kv/consistent_hash_ring.hpp"
#include "kv/swa_directory_shard.hpp"

namespace deepinfer::actors {

namespace {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

struct shard_state {
  int64_t ttl_ms = 180'000;
  kv::swa_directory_shard shard;
  /// Owners (snapshot servers) by the id the shard stores, and back.
  std::map<uint32_t, caf::strong_actor_ptr> owners;
  std::map<caf::actor_addr, uint32_t> ids;
  uint32_t next_id = 1;
  uint64_t records = 0;
  static inline const char* name = "deepinfer.swa_shard";
};

using shard_pointer = swa_shard_actor::stateful_pointer<shard_state>;

swa_shard_actor::behavior_type swa_shard(shard_pointer self, int64_t ttl_ms) {
  self->state.ttl_ms = ttl_ms;
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    auto i = st.ids.find(dm.source);
    if (i == st.ids.end())
      return;
    st.shard.forget_node(kv::node_id{i->second});
    st.owners.erase(i->second);
    st.ids.erase(i);
  });
  return {
    [=](swa_record_atom, const kv::block_key& key, caf::strong_actor_ptr& owner) {
      auto& st = self->state;
      if (!owner)
        return;
      auto addr = caf::actor_cast<caf::actor_addr>(owner);
      auto [it, fresh] = st.ids.emplace(addr, st.next_id);
      if (fresh) {
        st.owners[st.next_id++] = owner;
        self->monitor(owner);
      }
      auto now = now_ms();
      // Drop expired entries now and then, so the shard stays the size of its live entries.
      if (++st.records % 1024 == 0)
        st.shard.expire(now);
      st.shard.record(key, kv::node_id{it->second}, now + st.ttl_ms);
    },
    [=](swa_lookup_atom, const kv::block_key& key) -> caf::strong_actor_ptr {
      auto& st = self->state;
      auto owner = st.shard.lookup(key, now_ms());
      if (!owner)
        return nullptr;
      auto i = st.owners.find(owner->value);
      return i == st.owners.end() ? nullptr : i->second;
    },
  };
}

uint32_t name_hash(const std::string& s) {
  uint32_t h = 2166136261u;  // FNV-1a: stable across processes and builds
  for (unsigned char c : s)
    h = (h ^ c) * 16777619u;
  return h;
}

} // namespace

swa_shard_actor spawn_swa_shard(caf::actor_system& sys, int64_t ttl_ms) {
  return sys.spawn(swa_shard, ttl_ms);
}

caf::strong_actor_ptr swa_shard_for(const membership_view& view, const kv::block_key& key) {
  kv::consistent_hash_ring ring;
  std::map<uint32_t, caf::strong_actor_ptr> shards;
  for (auto& n : view.nodes)
    if (n.state == node_state::alive && n.info.swa_shard) {
      auto id = name_hash(n.info.name);
      if (shards.emplace(id, n.info.swa_shard).second)
        ring.add(kv::shard_id{id});
    }
  auto owner = ring.owner(key);
  return owner ? shards[owner->value] : nullptr;
}

} // namespace deepinfer::actors
