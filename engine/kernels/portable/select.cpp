// Portable top-k helpers (comparisons only: every ISA gives the same answers).
#include <algorithm>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

namespace deepinfer::engine::kernels::portable {

void group_max_keys(const float* scores, int64_t groups, uint32_t* out) {
  for (int64_t g = 0; g < groups; ++g)
    out[g] = canonical::order_key(*std::max_element(scores + g * 32, scores + g * 32 + 32));
}

int64_t count_keys_at_least(const uint32_t* keys, int64_t n, uint32_t t) {
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i)
    c += keys[i] >= t ? 1 : 0;
  return c;
}

int64_t collect_at_least(const float* scores, int64_t n, float t, int64_t base, int64_t* out) {
  int64_t m = 0;
  for (int64_t j = 0; j < n; ++j)
    if (scores[j] >= t)
      out[m++] = base + j;
  return m;
}

} // namespace deepinfer::engine::kernels::portable
