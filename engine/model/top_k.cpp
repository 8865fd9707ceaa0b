// ops::top_k_positions: the indexer's top-k selection (split from ops.cpp: selection, not
// arithmetic).
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <immintrin.h>
#include <vector>

#include "engine/model/ops.hpp"

// GCC 12's AVX-512 headers start many intrinsics from an "undefined" vector and then warn that it
// is uninitialized (GCC bug 105593); the warning says nothing about this file's code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::engine::ops {

namespace {
const bool has_avx512f = __builtin_cpu_supports("avx512f");
} // namespace

namespace {
// Order-preserving map of a float to an unsigned key (-0 counts as +0, as the comparison does).
inline uint32_t order_key(float f) {
  uint32_t u = 0;
  f += 0.0f;
  std::memcpy(&u, &f, sizeof(u));
  return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}
} // namespace

namespace {

// Writes the positions with a score >= t to `out`, ascending; returns how many.
int64_t collect_at_least_portable(const float* scores, int64_t n, float t, int64_t* out) {
  int64_t m = 0;
  for (int64_t j = 0; j < n; ++j)
    if (scores[j] >= t)
      out[m++] = j;
  return m;
}

// The same, 16 scores per compare: a mask, then its set bits.
__attribute__((target("avx512f"))) int64_t collect_at_least_avx512(const float* scores,
                                                                   int64_t n, float t,
                                                                   int64_t* out) {
  const __m512 tv = _mm512_set1_ps(t);
  int64_t m = 0, j0 = 0;
  for (; j0 + 16 <= n; j0 += 16) {
    uint32_t mask = _mm512_cmp_ps_mask(_mm512_loadu_ps(scores + j0), tv, _CMP_GE_OQ);
    for (; mask != 0; mask &= mask - 1)
      out[m++] = j0 + __builtin_ctz(mask);
  }
  for (; j0 < n; ++j0)
    if (scores[j0] >= t)
      out[m++] = j0;
  return m;
}


int64_t collect_at_least(const float* scores, int64_t n, float t, int64_t* out) {
  return has_avx512f ? collect_at_least_avx512(scores, n, t, out)
                     : collect_at_least_portable(scores, n, t, out);
}

// The radix path: exact whatever the distribution of the scores.
void top_k_radix(const float* scores, int64_t n, int64_t k, int64_t* out, uint32_t* keys);

} // namespace

namespace {

// The order keys of the maxima of `groups` consecutive groups of 32 scores.
void group_max_keys_portable(const float* scores, int64_t groups, uint32_t* out) {
  for (int64_t g = 0; g < groups; ++g)
    out[g] = order_key(*std::max_element(scores + g * 32, scores + g * 32 + 32));
}

__attribute__((target("avx512f"))) void group_max_keys_avx512(const float* scores,
                                                              int64_t groups, uint32_t* out) {
  for (int64_t g = 0; g < groups; ++g)
    out[g] = order_key(_mm512_reduce_max_ps(_mm512_max_ps(
        _mm512_loadu_ps(scores + g * 32), _mm512_loadu_ps(scores + g * 32 + 16))));
}

int64_t count_keys_at_least_portable(const uint32_t* keys, int64_t n, uint32_t t) {
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i)
    c += keys[i] >= t ? 1 : 0;
  return c;
}

__attribute__((target("avx512f"))) int64_t count_keys_at_least_avx512(const uint32_t* keys,
                                                                      int64_t n, uint32_t t) {
  const __m512i tv = _mm512_set1_epi32(static_cast<int32_t>(t));
  int64_t c = 0, i = 0;
  for (; i + 16 <= n; i += 16)
    c += __builtin_popcount(_mm512_cmpge_epu32_mask(_mm512_loadu_si512(keys + i), tv));
  return c + count_keys_at_least_portable(keys + i, n - i, t);
}

// The k-th largest of n keys (1 <= k <= n), by bisection over the key space: 32 vectorized
// counting passes, no data-dependent branches (a selection by comparisons mispredicts on
// random scores).
uint32_t kth_largest_key(const uint32_t* keys, int64_t n, int64_t k) {
  uint32_t lo = 0, hi = 0xFFFFFFFFu; // the answer lies in [lo, hi]
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2 + 1;
    const int64_t c = has_avx512f ? count_keys_at_least_avx512(keys, n, mid)
                                  : count_keys_at_least_portable(keys, n, mid);
    if (c >= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// The top k among `count` candidate positions (ascending, count >= k) that hold all of them:
// the k-th largest candidate key; those above it all count, equal ones go to the earliest
// positions.
void select_among(const float* scores, const int64_t* cand, int64_t count, int64_t k,
                  int64_t* out) {
  thread_local std::vector<uint32_t> keys;
  keys.resize(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    keys[static_cast<std::size_t>(i)] = order_key(scores[cand[i]]);
  const uint32_t kth = kth_largest_key(keys.data(), count, k);
  int64_t ties = k;
  for (int64_t i = 0; i < count; ++i)
    ties -= keys[static_cast<std::size_t>(i)] > kth ? 1 : 0;
  int64_t m = 0;
  for (int64_t i = 0; i < count && m < k; ++i) {
    const uint32_t key = keys[static_cast<std::size_t>(i)];
    if (key > kth || (key == kth && ties-- > 0))
      out[m++] = cand[i];
  }
}

// Appends to `out` the positions base + j (j < 32) of the group at `scores` whose key is >= t.
__attribute__((target("avx512f"))) int64_t collect_group_avx512(const float* scores, int64_t base,
                                                               float t, int64_t* out) {
  const __m512 tv = _mm512_set1_ps(t);
  uint32_t mask = _mm512_cmp_ps_mask(_mm512_loadu_ps(scores), tv, _CMP_GE_OQ) |
                  (uint32_t{_mm512_cmp_ps_mask(_mm512_loadu_ps(scores + 16), tv, _CMP_GE_OQ)} << 16);
  int64_t m = 0;
  for (; mask != 0; mask &= mask - 1)
    out[m++] = base + __builtin_ctz(mask);
  return m;
}

// The float whose order key is `key` (the inverse of order_key).
float from_order_key(uint32_t key) {
  const uint32_t u = (key & 0x80000000u) != 0 ? (key & 0x7FFFFFFFu) : ~key;
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

} // namespace

void top_k_positions(const float* scores, int64_t n, int64_t k, int64_t* out, uint32_t* keys) {
  thread_local std::vector<int64_t> cand;
  // Long contexts: the maxima of groups of 32 scores. The k-th largest maximum t is reached by
  // at least k scores (the k groups' maxima), so the positions >= t, found in the groups whose
  // maximum reaches t only, hold the top k. One streaming pass, then work on ~k groups.
  constexpr int64_t group = 32;
  if (const int64_t groups = n / group; groups >= 2 * k) {
    thread_local std::vector<uint32_t> gkeys;
    gkeys.resize(static_cast<std::size_t>(groups));
    if (has_avx512f)
      group_max_keys_avx512(scores, groups, gkeys.data());
    else
      group_max_keys_portable(scores, groups, gkeys.data());
    const uint32_t tk = kth_largest_key(gkeys.data(), groups, k);
    // Float comparisons agree with key comparisons (-0 and +0 share a key and compare equal).
    const float t = from_order_key(tk);
    cand.resize(static_cast<std::size_t>(n));
    int64_t count = 0;
    for (int64_t g = 0; g < groups; ++g) {
      if (gkeys[static_cast<std::size_t>(g)] < tk)
        continue;
      if (has_avx512f)
        count += collect_group_avx512(scores + g * group, g * group, t, cand.data() + count);
      else
        for (int64_t j = g * group; j < g * group + group; ++j)
          if (scores[j] >= t)
            cand[static_cast<std::size_t>(count++)] = j;
    }
    for (int64_t j = groups * group; j < n; ++j)
      if (scores[j] >= t)
        cand[static_cast<std::size_t>(count++)] = j;
    select_among(scores, cand.data(), count, k, out);
    return;
  }
  // Shorter ones: a threshold from a strided sample, then one vectorized pass collects the
  // positions that reach it: when there are at least k, they hold the top k. The result is the
  // same set whatever threshold is tried; an unlucky one falls back to the radix path.
  constexpr int64_t sample = 1024;
  if (n >= 16 * k && n >= 4 * sample) {
    thread_local std::vector<float> pool;
    pool.resize(sample);
    const int64_t step = n / sample;
    for (int64_t i = 0; i < sample; ++i)
      pool[static_cast<std::size_t>(i)] = scores[i * step];
    // Twice the expected sample rank of the k-th largest score.
    const int64_t rank = std::min<int64_t>(sample - 1, 2 * k * sample / n + 1);
    std::nth_element(pool.begin(), pool.begin() + rank, pool.end(), std::greater<>());
    const float t = pool[static_cast<std::size_t>(rank)];
    cand.resize(static_cast<std::size_t>(n));
    if (const int64_t count = collect_at_least(scores, n, t, cand.data()); count >= k) {
      select_among(scores, cand.data(), count, k, out);
      return;
    }
  }
  top_k_radix(scores, n, k, out, keys);
}

namespace {

void top_k_radix(const float* scores, int64_t n, int64_t k, int64_t* out, uint32_t* keys) {
  constexpr int shift = 20; // 4096 buckets on the top 12 bits of the key
  std::array<int64_t, 4096> hist{};
  for (int64_t j = 0; j < n; ++j) {
    keys[j] = order_key(scores[j]);
    ++hist[keys[j] >> shift];
  }
  // The bucket holding the k-th largest key, and how many keys lie above it.
  int64_t above = 0;
  uint32_t bucket = 4095;
  for (;; --bucket) {
    if (above + hist[bucket] >= k || bucket == 0)
      break;
    above += hist[bucket];
  }
  // The k-th largest key itself: a selection among that bucket only.
  thread_local std::vector<uint32_t> cand;
  cand.clear();
  for (int64_t j = 0; j < n; ++j)
    if ((keys[j] >> shift) == bucket)
      cand.push_back(keys[j]);
  const auto need = static_cast<std::size_t>(k - above); // in [1, cand.size()]
  std::nth_element(cand.begin(), cand.begin() + static_cast<int64_t>(need - 1), cand.end(),
                   std::greater<>());
  const uint32_t threshold = cand[need - 1];
  // Keys above the threshold all count; equal ones go to the earliest positions.
  int64_t ties = k;
  for (int64_t j = 0; j < n; ++j)
    ties -= keys[j] > threshold ? 1 : 0;
  int64_t m = 0;
  for (int64_t j = 0; j < n && m < k; ++j)
    if (keys[j] > threshold || (keys[j] == threshold && ties-- > 0))
      out[m++] = j;
}

} // namespace

} // namespace deepinfer::engine::ops
