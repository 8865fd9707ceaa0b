#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

namespace deepinfer::kv {

/// KV buffers in flight between a prefill and a decode rank, parked under a ticket until the
/// decode side takes (or releases) them; a parcel whose taker never comes (the decode rank died
/// in between) is dropped once it is older than `ttl`. The one store of every KV transport that
/// parks (in process: the buffer itself; RDMA: the registered buffer). Thread-safe.
template <class Parcel>
class parcel_store {
public:
  using clock = std::chrono::steady_clock;

  explicit parcel_store(std::chrono::milliseconds ttl) : ttl_(ttl) {}

  /// Parks `p` (dropping expired parcels first) and returns its ticket (never 0).
  uint64_t park(Parcel p) {
    auto now = clock::now();
    std::lock_guard<std::mutex> guard{mtx_};
    expire_locked(now);
    auto ticket = next_ticket_++;
    parcels_.emplace(ticket, entry{std::move(p), now});
    return ticket;
  }

  /// The parcel of `ticket`, removed; nullopt when it is gone (taken, expired or never parked).
  std::optional<Parcel> take(uint64_t ticket) {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = parcels_.find(ticket);
    if (i == parcels_.end())
      return std::nullopt;
    auto p = std::move(i->second.parcel);
    parcels_.erase(i);
    return p;
  }

  /// Drops the parcel of `ticket` if it is still here.
  void drop(uint64_t ticket) {
    std::lock_guard<std::mutex> guard{mtx_};
    parcels_.erase(ticket);
  }

  /// Drops every parcel older than the TTL.
  void expire() {
    auto now = clock::now();
    std::lock_guard<std::mutex> guard{mtx_};
    expire_locked(now);
  }

  /// Drops every parcel.
  void clear() {
    std::lock_guard<std::mutex> guard{mtx_};
    parcels_.clear();
  }

  /// Parcels parked now (neither taken nor expired).
  std::size_t size() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return parcels_.size();
  }

private:
  struct entry {
    Parcel parcel;
    clock::time_point parked;
  };

  void expire_locked(clock::time_point now) {
    for (auto i = parcels_.begin(); i != parcels_.end();)
      i = now - i->second.parked > ttl_ ? parcels_.erase(i) : std::next(i);
  }

  std::chrono::milliseconds ttl_;
  mutable std::mutex mtx_;
  uint64_t next_ticket_ = 1;
  std::map<uint64_t, entry> parcels_;
};

} // namespace deepinfer::kv
