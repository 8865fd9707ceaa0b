#pragma once

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/messages.hpp"

namespace deepinfer::actors {

/// A request's hold on what a balancer placed for it (a queued or running prefill, a decode
/// rank); releasing it is a `(release, key)` to that balancer when the claim goes, so every way
/// a request ends (finished, failed, cancelled, placed again) gives the capacity back.
class balancer_claim {
public:
  balancer_claim(caf::strong_actor_ptr balancer, uint64_t key) : balancer_(std::move(balancer)), key_(key) {
    // nop
  }
  ~balancer_claim() {
    if (balancer_)
      caf::anon_send(caf::actor_cast<caf::actor>(balancer_), release_atom::value, key_);
  }
  balancer_claim(const balancer_claim&) = delete;
  balancer_claim& operator=(const balancer_claim&) = delete;

  uint64_t key() const { return key_; }
  const caf::strong_actor_ptr& balancer() const { return balancer_; }

  /// Where the decode balancer put the request (empty for a prefill claim).
  std::string instance;
  uint32_t rank = 0;
  /// The KV length last reported to the balancer, and the most it may reach.
  int64_t kv_tokens = 0;
  int64_t reserve_tokens = 0;

private:
  caf::strong_actor_ptr balancer_;
  uint64_t key_;
};

} // namespace deepinfer::actors
