#include "balancers/cost_model.hpp"

#include <cmath>

namespace deepinfer::balancers {

cost_model::cost_model(const config& cfg) : cfg_(cfg) {}

cost_model::config cost_model::calibrate(const calibration& cal) {
  // Uncached reference: a + b*L + d*L^2 = L / uncached_rate, with d*L^2 = quad_share * total.
  config out;
  out.a = cal.overhead_s;
  const double len = cal.ref_len;
  const double total_uncached = len / cal.uncached_tok_per_s;
  out.d = cal.quad_share * total_uncached / (len * len);
  out.b = (total_uncached - out.a - out.d * len * len) / len;
  // Hit reference: q = (1-h)L new tokens over c = hL cached must cost L / with_hits_rate; the
  // cross term c2 takes what is left after a, b*q and d*q^2.
  const double q = (1.0 - cal.ref_hit) * len;
  const double c = cal.ref_hit * len;
  const double total_hit = len / cal.with_hits_tok_per_s;
  out.c2 = (total_hit - out.a - out.b * q - out.d * q * q) / (q * c);
  if (out.c2 < 0.0)
    out.c2 = 0.0; // targets unreachable with attention over the prefix: keep the model monotone
  return out;
}

double cost_model::cost(double q, double c) const {
  return q <= 0.0 ? 0.0 : cfg_.a + marginal(q, c);
}

double cost_model::marginal(double q, double c) const {
  if (q <= 0.0)
    return 0.0;
  return cfg_.b * q + cfg_.c2 * q * c + cfg_.d * q * q;
}

int64_t cost_model::max_tokens(double budget_s, double c) const {
  if (budget_s <= 0.0)
    return 0;
  const double lin = cfg_.b + cfg_.c2 * c;
  double q = 0.0;
  if (cfg_.d <= 0.0) {
    q = lin > 0.0 ? budget_s / lin : 1e18;
  } else {
    // Citardauq form avoids cancellation when d is tiny against lin^2.
    const double disc = lin * lin + 4.0 * cfg_.d * budget_s;
    q = 2.0 * budget_s / (lin + std::sqrt(disc));
  }
  auto n = static_cast<int64_t>(std::floor(q));
  // Guard the floating-point edge: the result must satisfy the budget exactly.
  while (n > 0 && marginal(static_cast<double>(n), c) > budget_s)
    --n;
  return n;
}

} // namespace deepinfer::balancers
