// ops::top_k_positions: the indexer's top-k selection (split from ops.cpp: selection, not
// arithmetic). Only comparisons: the kernel table only makes them faster.
#include <algorithm>
#include <array>
#include <functional>
#include <vector>

#include "engine/kernels/canonical.hpp"
#include "engine/model/ops.hpp"

namespace deepinfer::engine::ops {

namespace {

using kernels::canonical::order_key;
using kernels::canonical::from_order_key;

// The radix path: exact whatever the distribution of the scores.
void top_k_radix(const float* scores, int64_t n, int64_t k, int64_t* out, uint32_t* keys);

// The k-th largest of n keys (1 <= k <= n), by bisection over the key space: 32 vectorized
// counting passes, no data-dependent branches (a selection by comparisons mispredicts on
// random scores).
uint32_t kth_largest_key(const kernels::kernel_table& kern, const uint32_t* keys, int64_t n,
                         int64_t k) {
  uint32_t lo = 0, hi = 0xFFFFFFFFu; // the answer lies in [lo, hi]
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2 + 1;
    if (kern.count_keys_at_least(keys, n, mid) >= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// A key t that at least k and (most of the time) at most 1.5 k of the n group maxima reach: any
// t up to the k-th largest maximum works (the groups reaching it hold the top k), a lower one
// only brings more candidates. The bisection of kth_largest_key, stopped early.
uint32_t group_threshold(const kernels::kernel_table& kern, const uint32_t* keys, int64_t n, int64_t k) {
  uint32_t lo = 0, hi = 0xFFFFFFFFu; // the k-th largest lies in [lo, hi]
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2 + 1;
    const int64_t c = kern.count_keys_at_least(keys, n, mid);
    if (c >= k && c <= k + k / 2)
      return mid;
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
void select_among(const kernels::kernel_table& kern, const float* scores, const int64_t* cand,
                  int64_t count, int64_t k, int64_t* out) {
  thread_local std::vector<uint32_t> keys;
  keys.resize(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    keys[static_cast<std::size_t>(i)] = order_key(scores[cand[i]]);
  const uint32_t kth = kth_largest_key(kern, keys.data(), count, k);
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

} // namespace

void top_k_positions(const kernels::kernel_table& kern, const float* scores, int64_t n, int64_t k,
                     int64_t* out, uint32_t* keys) {
  thread_local std::vector<int64_t> cand;
  // Long contexts: the maxima of groups of 32 scores. The k-th largest maximum t is reached by
  // at least k scores (the k groups' maxima), so the positions >= t, found in the groups whose
  // maximum reaches t only, hold the top k. One streaming pass, then work on ~k groups.
  constexpr int64_t group = 32;
  if (const int64_t groups = n / group; groups >= 2 * k) {
    thread_local std::vector<uint32_t> gkeys;
    gkeys.resize(static_cast<std::size_t>(groups));
    kern.group_max_keys(scores, groups, gkeys.data());
    const uint32_t tk = group_threshold(kern, gkeys.data(), groups, k);
    // Float comparisons agree with key comparisons (-0 and +0 share a key and compare equal).
    const float t = from_order_key(tk);
    cand.resize(static_cast<std::size_t>(n));
    int64_t count = 0;
    for (int64_t g = 0; g < groups; ++g)
      if (gkeys[static_cast<std::size_t>(g)] >= tk)
        count += kern.collect_at_least(scores + g * group, group, t, g * group, cand.data() + count);
    count += kern.collect_at_least(scores + groups * group, n - groups * group, t, groups * group,
                                   cand.data() + count);
    select_among(kern, scores, cand.data(), count, k, out);
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
    if (const int64_t count = kern.collect_at_least(scores, n, t, 0, cand.data()); count >= k) {
      select_among(kern, scores, cand.data(), count, k, out);
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
