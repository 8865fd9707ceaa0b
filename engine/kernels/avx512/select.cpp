// AVX-512 top-k helpers (comparisons only: the same answers as the portable ones).
#include <algorithm>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

#include "engine/kernels/target_avx512.hpp"
#include "engine/kernels/avx512/vec.hpp"

namespace deepinfer::engine::kernels::avx512 {

void group_max_keys(const float* scores, int64_t groups, uint32_t* out) {
  for (int64_t g = 0; g < groups; ++g)
    out[g] = canonical::order_key(hmax(_mm512_max_ps(_mm512_loadu_ps(scores + g * 32),
                                                     _mm512_loadu_ps(scores + g * 32 + 16))));
}

int64_t count_keys_at_least(const uint32_t* keys, int64_t n, uint32_t t) {
  const __m512i tv = _mm512_set1_epi32(static_cast<int32_t>(t));
  int64_t c = 0, i = 0;
  for (; i + 16 <= n; i += 16)
    c += __builtin_popcount(_mm512_cmpge_epu32_mask(_mm512_loadu_si512(keys + i), tv));
  return c + portable::count_keys_at_least(keys + i, n - i, t);
}

int64_t collect_at_least(const float* scores, int64_t n, float t, int64_t base, int64_t* out) {
  const __m512 tv = _mm512_set1_ps(t);
  int64_t m = 0, j = 0;
  for (; j + 16 <= n; j += 16) {
    uint32_t mask = _mm512_cmp_ps_mask(_mm512_loadu_ps(scores + j), tv, _CMP_GE_OQ);
    for (; mask != 0; mask &= mask - 1)
      out[m++] = base + j + __builtin_ctz(mask);
  }
  return m + portable::collect_at_least(scores + j, n - j, t, base + j, out + m); // the last < 16
}

} // namespace deepinfer::engine::kernels::avx512

#include "engine/kernels/target_end.hpp"
