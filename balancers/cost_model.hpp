#pragma once

#include <cstdint>

namespace deepinfer::balancers {

/// Fitted prefill cost of one chunk: `cost(q, c) = a + b*q + c2*q*c + d*q^2` seconds, where q is the
/// number of new (uncached) tokens and c the prefix already computed (cache hits or earlier chunks).
///
/// `a` is the fixed per-step overhead, `b` the per-token linear part (MoE, projections), `c2` the
/// attention of new tokens over the cached prefix and `d` the causal attention among new tokens.
/// This is the compute-quota of DESIGN §6.1 and the step model of §5.3.
class cost_model {
public:
  /// Coefficients in seconds (per token, per token^2).
  struct config {
    double a = 0.0;
    double b = 0.0;
    double c2 = 0.0;
    double d = 0.0;
  };

  /// Calibration targets of DESIGN §9 for one prefill card.
  struct calibration {
    double overhead_s = 0.005;          ///< fixed per-step cost `a`
    double uncached_tok_per_s = 60e3;   ///< throughput for a fully uncached prompt of `ref_len`
    double with_hits_tok_per_s = 1.5e6; ///< throughput counting hits for `ref_len` at `ref_hit`
    double ref_len = 77e3;              ///< reference prompt length (tokens)
    double ref_hit = 0.96;              ///< reference hit ratio
    double quad_share = 0.25;           ///< share of d*q^2 in the cost of the uncached reference
  };

  explicit cost_model(const config& cfg);

  /// Solves the calibration targets for (b, c2, d); `a` is taken as given. The two throughput
  /// targets pin b + c2 for the given quadratic share; see bench/RESULTS.md for the figures.
  static config calibrate(const calibration& cal);

  /// Seconds to compute q new tokens after a prefix of c tokens, including the overhead `a`.
  double cost(double q, double c) const;

  /// Same without the fixed overhead (a second chunk in the same step pays no extra `a`).
  double marginal(double q, double c) const;

  /// Largest integer q >= 0 with `marginal(q, c) <= budget_s`, solving the quadratic
  /// `d*q^2 + (b + c2*c)*q - budget = 0` for its positive root. 0 when the budget is <= 0.
  int64_t max_tokens(double budget_s, double c) const;

  const config& coefficients() const { return cfg_; }

private:
  config cfg_;
};

} // namespace deepinfer::balancers
