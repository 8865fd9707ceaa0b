// AVX2 top-k helpers (comparisons only: the same answers as the portable ones).
#include <algorithm>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

#include "engine/kernels/target_avx2.hpp"
#include "engine/kernels/avx2/vec.hpp"

namespace deepinfer::engine::kernels::avx2 {

void group_max_keys(const float* scores, int64_t groups, uint32_t* out) {
  for (int64_t g = 0; g < groups; ++g) {
    const float* s = scores + g * 32;
    const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_loadu_ps(s), _mm256_loadu_ps(s + 8)),
                                   _mm256_max_ps(_mm256_loadu_ps(s + 16), _mm256_loadu_ps(s + 24)));
    out[g] = canonical::order_key(hmax(m));
  }
}

int64_t count_keys_at_least(const uint32_t* keys, int64_t n, uint32_t t) {
  // Unsigned order through signed compares: flip the top bit of both sides.
  const __m256i flip = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i tv = _mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(t)), flip);
  int64_t below = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i k = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys + i)), flip);
    below += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(tv, k)))));
  }
  return i - below + portable::count_keys_at_least(keys + i, n - i, t);
}

int64_t collect_at_least(const float* scores, int64_t n, float t, int64_t base, int64_t* out) {
  const __m256 tv = _mm256_set1_ps(t);
  int64_t m = 0, j = 0;
  for (; j + 8 <= n; j += 8) {
    auto mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(scores + j), tv, _CMP_GE_OQ)));
    for (; mask != 0; mask &= mask - 1)
      out[m++] = base + j + __builtin_ctz(mask);
  }
  return m + portable::collect_at_least(scores + j, n - j, t, base + j, out + m); // the last < 8
}

} // namespace deepinfer::engine::kernels::avx2

#include "engine/kernels/target_end.hpp"
