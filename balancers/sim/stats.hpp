#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace deepinfer::balancers::sim {

/// Nearest-rank percentile (p in [0, 100]) of `v`, which it sorts; 0 for an empty vector.
inline double percentile(std::vector<float>& v, double p) {
  if (v.empty())
    return 0.0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

} // namespace deepinfer::balancers::sim
