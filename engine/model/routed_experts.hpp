#pragma once

#include <cstdint>
#include <span>

namespace deepinfer::engine {

/// One routed expert chosen for a token row, with its combine weight (the sigmoid score
/// normalised over the row's selection, times the scaling factor).
struct expert_route {
  int32_t expert = 0;
  float weight = 0.0f;
};

/// Who computes the routed experts of a MoE layer. The forward routes every row itself (router,
/// top-k, weights) and hands the rows and their routes here; the default runs every expert on
/// this rank, `ep_rank` (engine/ep/) dispatches the rows to the ranks of an expert-parallel group
/// that hold the chosen experts and combines what comes back.
///
/// Exactness contract: out[r] += weight * expert(xn[r]) for the row's routes in ascending
/// expert order, one axpy each, so where an expert runs and with which other rows changes no bit.
class routed_experts {
public:
  virtual ~routed_experts() = default;

  /// **required** — adds the routed experts' outputs of MoE layer `layer` (encoder layers
  /// 0..E-1, then decoder layers E..E+D-1) to `out` [n x hidden]. `routes` holds `top` routes per
  /// row, each row's in ascending expert order. `n` may be 0.
  virtual void run(int layer, const float* xn, int64_t n, std::span<const expert_route> routes,
                   int top, float* out) = 0;

  /// **optional** (default: nothing) — called by the forward between two pieces of its work
  /// (never inside a `run`): `ep_rank` computes now the rows other ranks of its group wait on
  /// (their forwards' MoE layers), so a short forward beside a long one is not paced by the long
  /// one's layers. Changes no bit of anything.
  virtual void serve_waiting() {}
};

} // namespace deepinfer::engine
