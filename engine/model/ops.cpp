#include "engine/model/ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <immintrin.h>
#include <vector>

// GCC 12's AVX-512 headers start many intrinsics from an "undefined" vector and then warn that it
// is uninitialized (GCC bug 105593); the warning says nothing about this file's code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::engine::ops {

void rms_norm(const float* x, int64_t n, int64_t h, const float* w, float eps, float* out) {
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * h;
    float* o = out + r * h;
    float ss = 0.0f;
    for (int64_t i = 0; i < h; ++i)
      ss += xr[i] * xr[i];
    float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + eps);
    for (int64_t i = 0; i < h; ++i)
      o[i] = xr[i] * inv * w[i];
  }
}

void rope_angles(int64_t first, int64_t count, int64_t head_dim, float theta, float* cs) {
  // Angles in double: positions reach 10^5+ and float angles would lose the low bits. The
  // frequencies are computed once per call, not once per position.
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
  for (int64_t h = 0; h < heads; ++h) {
    float* p = row + h * head_dim;
    for (int64_t i = 0; i < head_dim; i += 2) {
      const float c = cs[i], s = cs[i + 1], x0 = p[i], x1 = p[i + 1];
      p[i] = x0 * c - x1 * s;
      p[i + 1] = x0 * s + x1 * c;
    }
  }
}

const bool has_avx512f = __builtin_cpu_supports("avx512f");

// The hot loops are cloned for AVX2; a CPU always runs the same clone, so results stay
// bit-identical between runs, batches and chunkings on one machine.
#define DEEPINFER_HOT __attribute__((target_clones("avx2", "default")))

namespace {
// y[j] += a * x[j]; restrict lets the vectorizer skip the runtime alias checks.
inline __attribute__((always_inline)) void axpy_into(float* __restrict y,
                                                     const float* __restrict x, float a,
                                                     int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    y[j] += a * x[j];
}
} // namespace

DEEPINFER_HOT float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l)
      acc[l] += a[i + l] * b[i + l];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

namespace {
// Softmax of one head's `scores` (already scaled) and the weighted sum of the values into `oh`.
inline void softmax_values(float* scores, int64_t nk, const float* v, int64_t kvw, int64_t g,
                           int64_t d, float* oh) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < nk; ++j)
    mx = std::max(mx, scores[j]);
  float sum = 0.0f;
  for (int64_t j = 0; j < nk; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  std::fill(oh, oh + d, 0.0f);
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < nk; ++j)
    axpy_into(oh, v + j * kvw + g * d, scores[j] * inv, d);
}

// The same over value rows found through pointers: value j is rows[j] + offset.
inline void softmax_gathered_values(float* scores, int64_t nk, const float* const* rows,
                                    int64_t offset, int64_t d, float* oh) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < nk; ++j)
    mx = std::max(mx, scores[j]);
  float sum = 0.0f;
  for (int64_t j = 0; j < nk; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  std::fill(oh, oh + d, 0.0f);
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < nk; ++j)
    axpy_into(oh, rows[j] + offset, scores[j] * inv, d);
}
} // namespace

namespace {

// attend for heads of width 32: 16 keys' scores per vector (an FMA chain over the 32 components,
// masked loads past nk), the values accumulated in two registers.
__attribute__((target("avx512f"))) void attend_d32(const float* q, const float* kt,
                                                  int64_t stride, const float* v, int64_t nk,
                                                  int64_t heads, int64_t kv_heads, float* scores,
                                                  float* out) {
  constexpr int64_t d = 32;
  const int64_t group = heads / kv_heads, kvw = kv_heads * d;
  const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(static_cast<float>(d)));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    const float* kg = kt + g * d * stride;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < nk; j += 16) {
      const __mmask16 m = nk - j >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (nk - j)) - 1);
      __m512 acc = _mm512_setzero_ps();
      for (int64_t i = 0; i < d; ++i)
        acc = _mm512_fmadd_ps(_mm512_set1_ps(qh[i]), _mm512_maskz_loadu_ps(m, kg + i * stride + j), acc);
      acc = _mm512_mul_ps(acc, scale);
      _mm512_mask_storeu_ps(scores + j, m, acc);
      mx = _mm512_mask_max_ps(mx, m, mx, acc);
    }
    const float top = _mm512_reduce_max_ps(mx);
    float sum = 0.0f;
    for (int64_t j = 0; j < nk; ++j) {
      scores[j] = std::exp(scores[j] - top);
      sum += scores[j];
    }
    const float inv = 1.0f / sum;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int64_t j = 0; j < nk; ++j) {
      const float* vj = v + j * kvw + g * d;
      const __m512 wj = _mm512_set1_ps(scores[j] * inv);
      a0 = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vj), a0);
      a1 = _mm512_fmadd_ps(wj, _mm512_loadu_ps(vj + 16), a1);
    }
    _mm512_storeu_ps(out + h * d, a0);
    _mm512_storeu_ps(out + h * d + 16, a1);
  }
}

} // namespace

DEEPINFER_HOT void attend(const float* q, const float* kt, int64_t stride, const float* v,
                          int64_t nk, int64_t heads, int64_t kv_heads, int64_t d, float* scores,
                          float* out) {
  if (d == 32 && has_avx512f) {
    attend_d32(q, kt, stride, v, nk, heads, kv_heads, scores, out);
    return;
  }
  const int64_t group = heads / kv_heads, kvw = kv_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    // Scores over keys: the inner loop runs over j, so it vectorizes without reordering sums.
    std::fill(scores, scores + nk, 0.0f);
    for (int64_t i = 0; i < d; ++i)
      axpy_into(scores, kt + (g * d + i) * stride, qh[i], nk);
    for (int64_t j = 0; j < nk; ++j)
      scores[j] *= scale;
    softmax_values(scores, nk, v, kvw, g, d, out + h * d);
  }
}

namespace {

// attend_gathered for heads of width 32 (two vectors): each score is two FMAs and a fixed
// reduction of one vector; the values accumulate in registers. The heads of one KV group go
// together, so each pick's K and V are loaded once for all of them.
__attribute__((target("avx512f"))) void attend_gathered_d32(const float* q, const float* const* kv,
                                                           int64_t v_offset, int64_t nk,
                                                           int64_t heads, int64_t kv_heads,
                                                           float* scores, float* out) {
  constexpr int64_t d = 32, max_group = 8;
  const int64_t group = heads / kv_heads;
  if (group > max_group) { // not a shape of ours: one head at a time
    for (int64_t h = 0; h < heads; ++h)
      attend_gathered_d32(q + h * d, kv, v_offset, nk, 1, 1, scores, out + h * d);
    return;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t g = 0; g < kv_heads; ++g) {
    __m512 q0[max_group], q1[max_group];
    float mx[max_group];
    for (int64_t e = 0; e < group; ++e) {
      q0[e] = _mm512_loadu_ps(q + (g * group + e) * d);
      q1[e] = _mm512_loadu_ps(q + (g * group + e) * d + 16);
      mx[e] = -INFINITY;
    }
    // scores[e * nk + j]: head g * group + e against pick j.
    for (int64_t j = 0; j < nk; ++j) {
      const float* k = kv[j] + g * d;
      const __m512 k0 = _mm512_loadu_ps(k), k1 = _mm512_loadu_ps(k + 16);
      for (int64_t e = 0; e < group; ++e) {
        const __m512 p = _mm512_fmadd_ps(q1[e], k1, _mm512_mul_ps(q0[e], k0));
        const float sc = _mm512_reduce_add_ps(p) * scale;
        scores[e * nk + j] = sc;
        mx[e] = std::max(mx[e], sc);
      }
    }
    __m512 a0[max_group], a1[max_group];
    for (int64_t e = 0; e < group; ++e) {
      float* se = scores + e * nk;
      float sum = 0.0f;
      for (int64_t j = 0; j < nk; ++j) {
        se[j] = std::exp(se[j] - mx[e]);
        sum += se[j];
      }
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < nk; ++j)
        se[j] *= inv;
      a0[e] = a1[e] = _mm512_setzero_ps();
    }
    for (int64_t j = 0; j < nk; ++j) {
      const float* v = kv[j] + v_offset + g * d;
      const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
      for (int64_t e = 0; e < group; ++e) {
        const __m512 wj = _mm512_set1_ps(scores[e * nk + j]);
        a0[e] = _mm512_fmadd_ps(wj, v0, a0[e]);
        a1[e] = _mm512_fmadd_ps(wj, v1, a1[e]);
      }
    }
    for (int64_t e = 0; e < group; ++e) {
      _mm512_storeu_ps(out + (g * group + e) * d, a0[e]);
      _mm512_storeu_ps(out + (g * group + e) * d + 16, a1[e]);
    }
  }
}

} // namespace

DEEPINFER_HOT void attend_gathered(const float* q, const float* const* kv, int64_t v_offset,
                                   int64_t nk, int64_t heads, int64_t kv_heads, int64_t d,
                                   float* scores, float* out) {
  if (d == 32 && has_avx512f) {
    attend_gathered_d32(q, kv, v_offset, nk, heads, kv_heads, scores, out);
    return;
  }
  const int64_t group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    for (int64_t j = 0; j < nk; ++j)
      scores[j] = dot(qh, kv[j] + g * d, d) * scale;
    softmax_gathered_values(scores, nk, kv, v_offset + g * d, d, out + h * d);
  }
}

void put_column(float* kt, int64_t nk, int64_t j, const float* src, int64_t width) {
  for (int64_t i = 0; i < width; ++i)
    kt[i * nk + j] = src[i];
}

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

void silu_mul(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    a[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
}

DEEPINFER_HOT void axpy(float* x, const float* y, float s, int64_t n) {
  axpy_into(x, y, s, n);
}

} // namespace deepinfer::engine::ops
