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
/// same number of times. One failed rank fails the group (DESIGN §3): once the group is failed
/// (`in_process_ep_domain::fail`, or NCCL's abort), every call returns false at once, also one
/// already waiting, so no rank waits forever for a dead one.
class ep_transport {
public:
  virtual ~ep_transport() = default;

  /// **required** — this rank, in [0, ranks()).
  virtual int rank() const = 0;
  /// **required** — the group's size (EP).
  virtual int ranks() const = 0;
  /// **required** — `send[d]` goes to rank d (ranks() entries, this rank's own included); on
  /// return `recv[s]` holds what rank s sent to this one. `recv` is resized as needed. False: the
  /// group failed (`recv` unspecified).
  virtual bool all_to_all(const std::vector<ep_buffer>& send, std::vector<ep_buffer>& recv) = 0;
  /// **required** — returns once every rank has called it; false: the group failed.
  virtual bool barrier() = 0;

  /// **optional** (default: 0) — seconds this rank's `all_to_all` calls so far spent waiting for
  /// the other ranks (to arrive, or to finish reading: their compute and scheduling, not this
  /// rank's data), to split exchange time into waiting and moving the data.
  virtual double arrival_wait_seconds() const { return 0.0; }

  /// **optional** (default: false) — not a collective: true when every other rank waits in the
  /// group's next `all_to_all` and one of them sends rows there (a forward waiting for experts
  /// this rank holds). A rank in the middle of other work may then take part in that exchange
  /// at once (`ep_rank::serve_waiting`): it completes without waiting. A hint only: false costs
  /// the waiting rank latency, never a wrong or stuck exchange.
  virtual bool peers_wait_with_rows() const { return false; }
};

} // namespace deepinfer::engine
