#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::engine {

/// What one rank sends another in one exchange: a few integers that describe the rows
/// (counts, layer, slots) and the rows themselves (f32, hidden floats each).
struct ep_buffer {
  std::vector<int32_t> header;
  std::vector<float> rows;
};

/// The exchange of an expert-parallel group, seen from one rank: the all-to-all of a MoE
/// layer's dispatch and combine, and a barrier. The CPU backend's ranks are threads of one
/// process (`in_process_ep_domain`: shared buffers and a barrier); a GPU backend implements the
/// same calls with NCCL (counts, then the rows, by grouped send/recv).
///
/// Every method is a collective: every rank of the group calls it, in the same order and the
/// same number of times, or the group waits forever (one failed rank fails the group, DESIGN §3).
class ep_transport {
public:
  virtual ~ep_transport() = default;

  /// **required** — this rank, in [0, ranks()).
  virtual int rank() const = 0;
  /// **required** — the group's size (EP).
  virtual int ranks() const = 0;
  /// **required** — `send[d]` goes to rank d (ranks() entries, this rank's own included); on
  /// return `recv[s]` holds what rank s sent to this one. `recv` is resized as needed.
  virtual void all_to_all(const std::vector<ep_buffer>& send, std::vector<ep_buffer>& recv) = 0;
  /// **required** — returns once every rank has called it.
  virtual void barrier() = 0;
};

} // namespace deepinfer::engine
