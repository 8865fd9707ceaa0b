#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace deepinfer::balancers {

/// The one prefill cost model of DESIGN §5.3 and §6.1: what a chunk of q new tokens after c
/// tokens already computed costs an engine,
/// `a0 + a1 q + a2 q c + a3 q^2` seconds, plus `f0 + f1 (c + q)` for the step that finishes the
/// prompt (the decoder pass). a0 is the per-step overhead, a1 the per-token part (MoE,
/// projections), a2 attention over the computed prefix, a3 causal attention among the new tokens.
///
/// The same object chunks prefills on a rank (`predict`, `max_tokens`: engine::prefill_scheduler)
/// and prices them for the balancers (`cost`: the compute-quota of §6.1, the entrypoint's
/// prefill router, `deepinfer-sim`). Its coefficients come either from a fit of measured steps
/// (`fit`; `engine::cost_profile` measures them when a model is made or first served and keeps
/// them in MODEL_DIR/cost_model.json, one fit per ISA and thread count) or, for the simulator at
/// production scale, from the seeds' figures (`calibrate`).
///
/// NOTE: it lives in engine/ because it models an engine and engine/ fits it; balancers/ links
/// deepinfer_engine for it (engine depends on none of our libraries, so there is no cycle, and a
/// static link pulls in this object alone).
class cost_model {
public:
  /// Coefficients in seconds (per token, per token^2). All zero: every prediction is 0.
  struct config {
    double a0 = 0.0;
    double a1 = 0.0;
    double a2 = 0.0;
    double a3 = 0.0;
    double f0 = 0.0;
    double f1 = 0.0;

    bool operator==(const config&) const = default;
  };

  /// One measured chunk (ns of wall time).
  struct sample {
    int64_t q = 0;
    int64_t c = 0;
    double ns = 0;
  };

  /// One measured finishing pass at context c (ns).
  struct finish_sample {
    int64_t c = 0;
    double ns = 0;
  };

  /// Calibration targets of DESIGN §9 for one production prefill card (no finishing pass: the
  /// seeds' figures are whole-prompt throughputs).
  struct calibration {
    double overhead_s = 0.005;          ///< fixed per-step cost a0
    double uncached_tok_per_s = 60e3;   ///< throughput for a fully uncached prompt of `ref_len`
    double with_hits_tok_per_s = 1.5e6; ///< throughput counting hits for `ref_len` at `ref_hit`
    double ref_len = 77e3;              ///< reference prompt length (tokens)
    double ref_hit = 0.96;              ///< reference hit ratio
    double quad_share = 0.25;           ///< share of a3 q^2 in the cost of the uncached reference
  };

  /// The zero model.
  cost_model() = default;

  /// A model with these coefficients.
  explicit cost_model(const config& cfg) : cfg_(cfg) {
    // nop
  }

  /// Least-squares fit of measured chunks and finishing passes, every coefficient constrained
  /// to be >= 0 (a term the samples make negative is dropped and the rest refitted), so the
  /// model never falls with q or c. nullopt when the samples cannot determine it.
  static std::optional<cost_model> fit(std::span<const sample> chunks,
                                       std::span<const finish_sample> finishes);

  /// Solves the calibration targets for (a1, a2, a3); a0 is taken as given. The two throughput
  /// targets pin a1 + a2 for the given quadratic share; see bench/RESULTS.md for the figures.
  static cost_model calibrate(const calibration& cal);

  /// Predicted ns of a chunk of q tokens at context c (plus the finishing pass when `last`).
  double predict(int64_t q, int64_t c, bool last = false) const;

  /// The largest q in [0, cap] whose chunk fits `budget_ns` at context c, overhead included;
  /// the finishing pass is counted when q == cap.
  int64_t max_tokens(int64_t c, double budget_ns, int64_t cap) const;

  /// The compute-quota of a prefill (DESIGN §6.1): seconds to compute q new tokens after c,
  /// as one chunk with its finishing pass. 0 when q <= 0.
  double cost(double q, double c) const;

  /// Seconds of q new tokens after c without the step overhead and the finishing pass (a
  /// further chunk batched into a step that already paid a0). 0 when q <= 0.
  double marginal(double q, double c) const;

  /// Largest integer q >= 0 with `marginal(q, c) <= budget_s` (the positive root of
  /// `a3 q^2 + (a1 + a2 c) q - budget = 0`). 0 when the budget is <= 0.
  int64_t marginal_tokens(double budget_s, double c) const;

  /// The coefficients (seconds).
  const config& coefficients() const { return cfg_; }

  /// The coefficients as JSON, in ns (the unit `deepinfer-profile` measures).
  std::string to_json() const;

  /// Parses `to_json` output (an object with a0..a3 and optionally f0, f1, in ns); nullopt on
  /// malformed text or a negative coefficient.
  static std::optional<cost_model> from_json(const std::string& text);

private:
  config cfg_;
};

} // namespace deepinfer::balancers
