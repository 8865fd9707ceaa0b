#include "actors/swa/snapshot_fetch.hpp"

#include <chrono>
#include <cstring>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/interfaces.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

/// Limit for fetching an SWA snapshot from another node (a replay is the fallback).
constexpr auto snapshot_fetch_timeout = std::chrono::milliseconds(500);

} // namespace

bool fetch_remote_snapshot(caf::actor_system& sys, kv::prefix_cache& cache, std::span<const int32_t> tokens,
                           int64_t end, const caf::strong_actor_ptr& owner, uint32_t rank, kv::cache_salt salt,
                           std::span<const kv::image_mark> images) {
  auto key = cache.key_at(tokens, end, salt, images);
  if (!key || cache.local_snapshot(*key))
    return false;
  std::vector<std::byte> bytes;
  caf::scoped_actor fetcher{sys};
  fetcher->request(caf::actor_cast<snapshot_server_actor>(owner), snapshot_fetch_timeout,
                   swa_fetch_atom::value, *key)
    .receive(
      [&](byte_payload& p) {
        bytes.resize(p.bytes.size());
        std::memcpy(bytes.data(), p.bytes.data(), p.bytes.size());
      },
      [&](caf::error& e) {
        log().info("rank={} remote SWA snapshot unavailable: {}", rank, sys.render(e));
      });
  return !bytes.empty() && cache.store_snapshot(tokens, end, std::move(bytes), salt, images);
}

} // namespace deepinfer::actors
