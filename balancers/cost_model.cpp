#include "balancers/cost_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

namespace deepinfer::balancers {

namespace {

constexpr double ns_per_s = 1e9;

// Solves the normal equations of the columns in `use` by Gaussian elimination with partial
// pivoting; features are pre-scaled by the caller so the system is well conditioned. Unused
// columns come back 0.
template <std::size_t N>
std::optional<std::array<double, N>> solve(const std::vector<std::pair<std::array<double, N>, double>>& rows,
                                           const std::array<bool, N>& use) {
  std::vector<std::size_t> cols;
  for (std::size_t i = 0; i < N; ++i)
    if (use[i])
      cols.push_back(i);
  const std::size_t n = cols.size();
  if (n == 0)
    return std::nullopt;
  std::vector<std::vector<double>> m(n, std::vector<double>(n + 1, 0.0));
  for (const auto& [f, y] : rows)
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j)
        m[i][j] += f[cols[i]] * f[cols[j]];
      m[i][n] += f[cols[i]] * y;
    }
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t piv = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[piv][col]))
        piv = r;
    if (std::fabs(m[piv][col]) < 1e-12)
      return std::nullopt;
    std::swap(m[col], m[piv]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == col)
        continue;
      const double k = m[r][col] / m[col][col];
      for (std::size_t j = col; j <= n; ++j)
        m[r][j] -= k * m[col][j];
    }
  }
  std::array<double, N> x{};
  for (std::size_t i = 0; i < n; ++i)
    x[cols[i]] = m[i][n] / m[i][i];
  return x;
}

// Least squares with x >= 0: while the fit has a negative coefficient, the most negative term
// leaves and the rest is refitted (the samples could not tell it from noise).
template <std::size_t N>
std::optional<std::array<double, N>> non_negative_fit(const std::vector<std::pair<std::array<double, N>, double>>& rows) {
  std::array<bool, N> use;
  use.fill(true);
  for (;;) {
    auto x = solve<N>(rows, use);
    if (!x)
      return std::nullopt;
    std::size_t worst = N;
    for (std::size_t i = 0; i < N; ++i)
      if (use[i] && (*x)[i] < 0 && (worst == N || (*x)[i] < (*x)[worst]))
        worst = i;
    if (worst == N)
      return x;
    use[worst] = false;
  }
}

} // namespace

std::optional<cost_model> cost_model::fit(std::span<const sample> chunks,
                                          std::span<const finish_sample> finishes) {
  // Scale q and c to O(1) and ns to ms so the normal equations stay well conditioned.
  constexpr double s = 1.0 / 1024.0, ms = 1e-6;
  std::vector<std::pair<std::array<double, 4>, double>> rows;
  for (const auto& x : chunks) {
    const double q = static_cast<double>(x.q) * s, c = static_cast<double>(x.c) * s;
    rows.push_back({{1.0, q, q * c, q * q}, x.ns * ms});
  }
  if (rows.size() < 4)
    return std::nullopt;
  auto a = non_negative_fit<4>(rows);
  if (!a)
    return std::nullopt;
  // Back to seconds per token (per token^2).
  constexpr double to_s = 1e-3;
  config k;
  k.a0 = (*a)[0] * to_s;
  k.a1 = (*a)[1] * s * to_s;
  k.a2 = (*a)[2] * s * s * to_s;
  k.a3 = (*a)[3] * s * s * to_s;
  std::vector<std::pair<std::array<double, 2>, double>> frows;
  for (const auto& x : finishes)
    frows.push_back({{1.0, static_cast<double>(x.c) * s}, x.ns * ms});
  if (!frows.empty()) {
    auto f = non_negative_fit<2>(frows);
    if (!f)
      return std::nullopt;
    k.f0 = (*f)[0] * to_s;
    k.f1 = (*f)[1] * s * to_s;
  }
  return cost_model{k};
}

cost_model cost_model::calibrate(const calibration& cal) {
  // Uncached reference: a0 + a1 L + a3 L^2 = L / uncached_rate, with a3 L^2 = quad_share * total.
  config out;
  out.a0 = cal.overhead_s;
  const double len = cal.ref_len;
  const double total_uncached = len / cal.uncached_tok_per_s;
  out.a3 = cal.quad_share * total_uncached / (len * len);
  out.a1 = (total_uncached - out.a0 - out.a3 * len * len) / len;
  // Hit reference: q = (1-h)L new tokens over c = hL cached must cost L / with_hits_rate; the
  // cross term a2 takes what is left after a0, a1 q and a3 q^2.
  const double q = (1.0 - cal.ref_hit) * len;
  const double c = cal.ref_hit * len;
  const double total_hit = len / cal.with_hits_tok_per_s;
  out.a2 = (total_hit - out.a0 - out.a1 * q - out.a3 * q * q) / (q * c);
  if (out.a2 < 0.0)
    out.a2 = 0.0; // targets unreachable with attention over the prefix: keep the model monotone
  return cost_model{out};
}

double cost_model::predict(int64_t q, int64_t c, bool last) const {
  const auto qd = static_cast<double>(q), cd = static_cast<double>(c);
  double t = cfg_.a0 + cfg_.a1 * qd + cfg_.a2 * qd * cd + cfg_.a3 * qd * qd;
  if (last)
    t += cfg_.f0 + cfg_.f1 * (cd + qd);
  return t * ns_per_s;
}

int64_t cost_model::max_tokens(int64_t c, double budget_ns, int64_t cap) const {
  if (cap <= 0)
    return 0;
  if (predict(cap, c, true) <= budget_ns)
    return cap;
  // A full cap would need the finish, which did not fit.
  int64_t n = std::min(marginal_tokens(budget_ns / ns_per_s - cfg_.a0, static_cast<double>(c)), cap - 1);
  while (n > 0 && predict(n, c) > budget_ns)
    --n;
  return n;
}

double cost_model::cost(double q, double c) const {
  return q <= 0.0 ? 0.0 : (cfg_.a0 + marginal(q, c)) + (cfg_.f0 + cfg_.f1 * (c + q));
}

double cost_model::marginal(double q, double c) const {
  if (q <= 0.0)
    return 0.0;
  return cfg_.a1 * q + cfg_.a2 * q * c + cfg_.a3 * q * q;
}

int64_t cost_model::marginal_tokens(double budget_s, double c) const {
  if (budget_s <= 0.0)
    return 0;
  const double lin = cfg_.a1 + cfg_.a2 * c;
  double q = 0.0;
  if (cfg_.a3 <= 0.0) {
    q = lin > 0.0 ? budget_s / lin : 1e18;
  } else {
    // Citardauq form avoids cancellation when a3 is tiny against lin^2.
    const double disc = lin * lin + 4.0 * cfg_.a3 * budget_s;
    q = 2.0 * budget_s / (lin + std::sqrt(disc));
  }
  auto n = static_cast<int64_t>(std::floor(std::min(q, 1e18)));
  // Guard the floating-point edge: the result must satisfy the budget exactly.
  while (n > 0 && marginal(static_cast<double>(n), c) > budget_s)
    --n;
  return n;
}

std::string cost_model::to_json() const {
  nlohmann::ordered_json j;
  j["formula"] = "ns = a0 + a1 q + a2 q c + a3 q^2 (+ f0 + f1 (c + q) for the last chunk)";
  j["a0"] = cfg_.a0 * ns_per_s;
  j["a1"] = cfg_.a1 * ns_per_s;
  j["a2"] = cfg_.a2 * ns_per_s;
  j["a3"] = cfg_.a3 * ns_per_s;
  j["f0"] = cfg_.f0 * ns_per_s;
  j["f1"] = cfg_.f1 * ns_per_s;
  return j.dump(2) + "\n";
}

std::optional<cost_model> cost_model::from_json(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    config k;
    k.a0 = j.at("a0").get<double>() / ns_per_s;
    k.a1 = j.at("a1").get<double>() / ns_per_s;
    k.a2 = j.at("a2").get<double>() / ns_per_s;
    k.a3 = j.at("a3").get<double>() / ns_per_s;
    k.f0 = j.value("f0", 0.0) / ns_per_s;
    k.f1 = j.value("f1", 0.0) / ns_per_s;
    for (double v : {k.a0, k.a1, k.a2, k.a3, k.f0, k.f1})
      if (!(v >= 0.0) || !std::isfinite(v))
        return std::nullopt;
    return cost_model{k};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

} // namespace deepinfer::balancers
