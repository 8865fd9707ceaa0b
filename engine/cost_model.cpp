#include "engine/cost_model.hpp"

#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace deepinfer::engine {

namespace {

// Solves the n x n normal equations (A^T A) x = A^T y by Gaussian elimination with partial
// pivoting; features are pre-scaled by the caller so the system is well conditioned.
template <std::size_t N>
std::optional<std::array<double, N>> solve(std::array<std::array<double, N + 1>, N> m) {
  for (std::size_t col = 0; col < N; ++col) {
    std::size_t piv = col;
    for (std::size_t r = col + 1; r < N; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[piv][col]))
        piv = r;
    if (std::fabs(m[piv][col]) < 1e-12)
      return std::nullopt;
    std::swap(m[col], m[piv]);
    for (std::size_t r = 0; r < N; ++r) {
      if (r == col)
        continue;
      double f = m[r][col] / m[col][col];
      for (std::size_t k = col; k <= N; ++k)
        m[r][k] -= f * m[col][k];
    }
  }
  std::array<double, N> x{};
  for (std::size_t i = 0; i < N; ++i)
    x[i] = m[i][N] / m[i][i];
  return x;
}

template <std::size_t N, class Rows>
std::optional<std::array<double, N>> least_squares(const Rows& rows) {
  std::array<std::array<double, N + 1>, N> m{};
  for (const auto& [f, y] : rows)
    for (std::size_t i = 0; i < N; ++i) {
      for (std::size_t j = 0; j < N; ++j)
        m[i][j] += f[i] * f[j];
      m[i][N] += f[i] * y;
    }
  return solve<N>(m);
}

} // namespace

std::optional<cost_model> cost_model::fit(std::span<const sample> chunks,
                                          std::span<const finish_sample> finishes) {
  // Scale q and c to O(1) so the normal equations stay well conditioned.
  constexpr double s = 1.0 / 1024.0;
  std::vector<std::pair<std::array<double, 4>, double>> rows;
  for (const auto& x : chunks) {
    double q = static_cast<double>(x.q) * s, c = static_cast<double>(x.c) * s;
    rows.push_back({{1.0, q, q * c, q * q}, x.ns});
  }
  auto a = least_squares<4>(rows);
  if (!a)
    return std::nullopt;
  cost_model m;
  m.a0 = (*a)[0];
  m.a1 = (*a)[1] * s;
  m.a2 = (*a)[2] * s * s;
  m.a3 = (*a)[3] * s * s;
  std::vector<std::pair<std::array<double, 2>, double>> frows;
  for (const auto& x : finishes)
    frows.push_back({{1.0, static_cast<double>(x.c) * s}, x.ns});
  if (!frows.empty()) {
    auto f = least_squares<2>(frows);
    if (!f)
      return std::nullopt;
    m.f0 = (*f)[0];
    m.f1 = (*f)[1] * s;
  }
  return m;
}

double cost_model::predict(int64_t q, int64_t c, bool last) const {
  auto qd = static_cast<double>(q), cd = static_cast<double>(c);
  double t = a0 + a1 * qd + a2 * qd * cd + a3 * qd * qd;
  if (last)
    t += f0 + f1 * (cd + qd);
  return t;
}

int64_t cost_model::max_tokens(int64_t c, double budget_ns, int64_t cap) const {
  if (cap <= 0)
    return 0;
  if (predict(cap, c, true) <= budget_ns)
    return cap;
  // a3 q^2 + (a1 + a2 c) q + (a0 - budget) = 0, largest root.
  const double a = a3, b = a1 + a2 * static_cast<double>(c), k = a0 - budget_ns;
  double q = 0;
  if (std::fabs(a) < 1e-18)
    q = b > 0 ? -k / b : static_cast<double>(cap);
  else {
    double disc = b * b - 4 * a * k;
    if (disc < 0)
      return 0;
    q = (-b + std::sqrt(disc)) / (2 * a);
  }
  auto n = static_cast<int64_t>(std::floor(std::max(0.0, q)));
  n = std::min(n, cap - 1); // a full cap would need the finish, which did not fit
  while (n > 0 && predict(n, c) > budget_ns)
    --n;
  return n;
}

std::string cost_model::to_json() const {
  nlohmann::ordered_json j;
  j["formula"] = "ns = a0 + a1 q + a2 q c + a3 q^2 (+ f0 + f1 (c + q) for the last chunk)";
  j["a0"] = a0;
  j["a1"] = a1;
  j["a2"] = a2;
  j["a3"] = a3;
  j["f0"] = f0;
  j["f1"] = f1;
  return j.dump(2) + "\n";
}

std::optional<cost_model> cost_model::from_json(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    cost_model m;
    m.a0 = j.at("a0");
    m.a1 = j.at("a1");
    m.a2 = j.at("a2");
    m.a3 = j.at("a3");
    m.f0 = j.value("f0", 0.0);
    m.f1 = j.value("f1", 0.0);
    return m;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<cost_model> cost_model::load(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str());
}

} // namespace deepinfer::engine
