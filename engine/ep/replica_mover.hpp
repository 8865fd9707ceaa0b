#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace deepinfer::engine {

/// One expert replica's weights leaving this rank for another (`to`), named by `tag` (the same
/// on both sides: the move's index in the group's plan).
struct replica_send {
  int32_t to = 0;
  int32_t tag = 0;
  const float* weights = nullptr;
};

/// One expert replica's weights arriving at this rank from `from` into `weights`.
struct replica_receive {
  int32_t from = 0;
  int32_t tag = 0;
  float* weights = nullptr;
};

/// Moves expert replicas' weights between the ranks of an EP group when experts are re-placed
/// (between two steps). The CPU backend copies in process (`in_process_ep_domain`); a GPU
/// backend implements it with device-to-device copies (NCCL send/recv or peer copies).
class replica_mover {
public:
  virtual ~replica_mover() = default;

  /// **required** — collective over the group: every rank calls it once per re-placement with
  /// what it sends and receives; on return every `receives[i].weights` holds the `floats` floats
  /// of the matching send. A send's buffer must stay unchanged until every rank has returned.
  /// False: the group failed (the receive buffers are unspecified).
  virtual bool move(std::span<const replica_send> sends, std::span<const replica_receive> receives,
                    std::size_t floats) = 0;
};

} // namespace deepinfer::engine
