#include "engine/ep/in_process_ep_domain.hpp"

#include <algorithm>
#include <cstring>

namespace deepinfer::engine {

/// One rank's side of the domain: both of its interfaces.
class in_process_ep_domain::endpoint final : public ep_transport, public replica_mover {
public:
  endpoint(in_process_ep_domain& d, int rank) : d_(d), rank_(rank) {}
  int rank() const override { return rank_; }
  int ranks() const override { return d_.ranks(); }

  void all_to_all(const std::vector<ep_buffer>& send, std::vector<ep_buffer>& recv) override {
    const auto n = static_cast<std::size_t>(ranks());
    d_.published_[static_cast<std::size_t>(rank_)] = &send;
    d_.wait();
    recv.resize(n);
    for (std::size_t s = 0; s < n; ++s) {
      const auto& from = (*d_.published_[s])[static_cast<std::size_t>(rank_)];
      recv[s].header.assign(from.header.begin(), from.header.end());
      recv[s].rows.assign(from.rows.begin(), from.rows.end());
    }
    d_.wait();
  }

  void barrier() override { d_.wait(); }

  void move(std::span<const replica_send> sends, std::span<const replica_receive> receives,
            std::size_t floats) override {
    d_.published_sends_[static_cast<std::size_t>(rank_)] = sends;
    d_.wait();
    for (const auto& r : receives) {
      const auto& theirs = d_.published_sends_[static_cast<std::size_t>(r.from)];
      auto it = std::find_if(theirs.begin(), theirs.end(),
                             [&](const replica_send& s) { return s.to == rank_ && s.tag == r.tag; });
      if (it != theirs.end())
        std::memcpy(r.weights, it->weights, floats * sizeof(float));
    }
    d_.wait();
  }

private:
  in_process_ep_domain& d_;
  int rank_;
};

in_process_ep_domain::in_process_ep_domain(int ranks)
    : barrier_(ranks), published_(static_cast<std::size_t>(ranks), nullptr),
      published_sends_(static_cast<std::size_t>(ranks)) {
  for (int r = 0; r < ranks; ++r)
    endpoints_.push_back(std::make_unique<endpoint>(*this, r));
}

in_process_ep_domain::~in_process_ep_domain() = default;

ep_transport& in_process_ep_domain::transport(int rank) {
  return *endpoints_[static_cast<std::size_t>(rank)];
}

replica_mover& in_process_ep_domain::mover(int rank) {
  return *endpoints_[static_cast<std::size_t>(rank)];
}

} // namespace deepinfer::engine
