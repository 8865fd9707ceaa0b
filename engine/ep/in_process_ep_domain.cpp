#include "engine/ep/in_process_ep_domain.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace deepinfer::engine {

/// One rank's side of the domain: both of its interfaces.
class in_process_ep_domain::endpoint final : public ep_transport, public replica_mover {
public:
  endpoint(in_process_ep_domain& d, int rank) : d_(d), rank_(rank) {}
  int rank() const override { return rank_; }
  int ranks() const override { return d_.ranks(); }

  bool all_to_all(const std::vector<ep_buffer>& send, std::vector<ep_buffer>& recv) override {
    const auto n = static_cast<std::size_t>(ranks());
    d_.published_[static_cast<std::size_t>(rank_)] = &send;
    const bool rows = std::any_of(send.begin(), send.end(), [](const ep_buffer& b) { return !b.rows.empty(); });
    if (rows) // before arriving: a rank that sees the arrival sees this too
      d_.rows_waiting_.fetch_add(1, std::memory_order_relaxed);
    const auto t0 = std::chrono::steady_clock::now();
    const bool arrived = d_.wait();
    if (rows)
      d_.rows_waiting_.fetch_sub(1, std::memory_order_relaxed);
    wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!arrived)
      return false;
    recv.resize(n);
    for (std::size_t s = 0; s < n; ++s) {
      const auto& from = (*d_.published_[s])[static_cast<std::size_t>(rank_)];
      recv[s].header.assign(from.header.begin(), from.header.end());
      recv[s].rows.assign(from.rows.begin(), from.rows.end());
    }
    const auto t1 = std::chrono::steady_clock::now();
    const bool done = d_.wait();
    wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    return done;
  }

  bool barrier() override { return d_.wait(); }
  double arrival_wait_seconds() const override { return wait_seconds_; }
  bool peers_wait_with_rows() const override {
    // Every other rank has arrived at the barrier this one has not (the next exchange's), and
    // a rank with rows is among them.
    return d_.arrived_.load(std::memory_order_acquire) == ranks() - 1 &&
           d_.rows_waiting_.load(std::memory_order_relaxed) > 0;
  }

  bool move(std::span<const replica_send> sends, std::span<const replica_receive> receives,
            std::size_t floats) override {
    d_.published_sends_[static_cast<std::size_t>(rank_)] = sends;
    if (!d_.wait())
      return false;
    for (const auto& r : receives) {
      const auto& theirs = d_.published_sends_[static_cast<std::size_t>(r.from)];
      auto it = std::find_if(theirs.begin(), theirs.end(),
                             [&](const replica_send& s) { return s.to == rank_ && s.tag == r.tag; });
      if (it != theirs.end())
        std::memcpy(r.weights, it->weights, floats * sizeof(float));
    }
    return d_.wait();
  }

private:
  in_process_ep_domain& d_;
  int rank_;
  double wait_seconds_ = 0.0;
};

in_process_ep_domain::in_process_ep_domain(int ranks)
    : published_(static_cast<std::size_t>(ranks), nullptr),
      published_sends_(static_cast<std::size_t>(ranks)) {
  for (int r = 0; r < ranks; ++r)
    endpoints_.push_back(std::make_unique<endpoint>(*this, r));
}

in_process_ep_domain::~in_process_ep_domain() = default;

bool in_process_ep_domain::wait() {
  const uint64_t at = state_.load(std::memory_order_acquire);
  if ((at & 1) != 0)
    return false;
  // The last to arrive opens the next generation; the arrivals' release/acquire chain on
  // arrived_ makes everything the others wrote before arriving visible to every rank.
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == ranks()) {
    arrived_.store(0, std::memory_order_relaxed);
    state_.fetch_add(2, std::memory_order_acq_rel);
    state_.notify_all();
    return true;
  }
  // atomic::wait spins briefly and yields before it sleeps (libstdc++), which suits ranks that
  // share cores: a waiting rank gives its core to the one it waits for.
  auto passed = [&](uint64_t now) { return (now >> 1) != (at >> 1); };
  for (;;) {
    const uint64_t now = state_.load(std::memory_order_acquire);
    if (passed(now))
      return true;
    if ((now & 1) != 0)
      return false;
    state_.wait(now, std::memory_order_acquire);
  }
}

void in_process_ep_domain::fail() {
  state_.fetch_or(1, std::memory_order_acq_rel);
  state_.notify_all();
}

bool in_process_ep_domain::failed() const {
  return (state_.load(std::memory_order_acquire) & 1) != 0;
}

ep_transport& in_process_ep_domain::transport(int rank) {
  return *endpoints_[static_cast<std::size_t>(rank)];
}

replica_mover& in_process_ep_domain::mover(int rank) {
  return *endpoints_[static_cast<std::size_t>(rank)];
}

} // namespace deepinfer::engine
