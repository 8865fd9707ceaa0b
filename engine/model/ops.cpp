#include "engine/model/ops.hpp"

#include <cmath>
#include <vector>

namespace deepinfer::engine::ops {

void rope_angles(int64_t first, int64_t count, int64_t head_dim, float theta, float* cs) {
  // Angles in double: positions reach 10^5+ and float angles would lose the low bits. The
  // frequencies are computed once per call, not once per position. libm's double cos / sin,
  // rounded to float, are the same on every ISA this project runs on (both pick glibc's FMA
  // variants; a last-bit difference in double would also have to straddle a float rounding
  // boundary to show).
  std::vector<double> inv(static_cast<std::size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim / 2; ++i)
    inv[static_cast<std::size_t>(i)] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) /
                                                                            static_cast<double>(head_dim));
  for (int64_t p = 0; p < count; ++p)
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      const double a = static_cast<double>(first + p) * inv[static_cast<std::size_t>(i)];
      cs[p * head_dim + 2 * i] = static_cast<float>(std::cos(a));
      cs[p * head_dim + 2 * i + 1] = static_cast<float>(std::sin(a));
    }
}

void rope(float* row, int64_t heads, int64_t head_dim, const float* cs) {
  // Products and a sum / difference, never fused (-ffp-contract=off): the same on every ISA.
  for (int64_t h = 0; h < heads; ++h) {
    float* p = row + h * head_dim;
    for (int64_t i = 0; i < head_dim; i += 2) {
      const float c = cs[i], s = cs[i + 1], x0 = p[i], x1 = p[i + 1];
      p[i] = x0 * c - x1 * s;
      p[i + 1] = x0 * s + x1 * c;
    }
  }
}

void put_columns(float* kt, int64_t nk, int64_t j, const float* const* src, int64_t m, int64_t width) {
  for (int64_t i = 0; i < width; ++i) {
    float* out = kt + i * nk + j;
    for (int64_t t = 0; t < m; ++t)
      out[t] = src[t][i];
  }
}

} // namespace deepinfer::engine::ops
