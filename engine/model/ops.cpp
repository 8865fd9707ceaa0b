#include "engine/model/ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <immintrin.h>
#include <vector>

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

void rope_angles(int64_t pos, int64_t head_dim, float theta, float* cs) {
  // Angles in double: positions reach 10^5+ and float angles would lose the low bits.
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    double inv = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) /
                                                          static_cast<double>(head_dim));
    double a = static_cast<double>(pos) * inv;
    cs[2 * i] = static_cast<float>(std::cos(a));
    cs[2 * i + 1] = static_cast<float>(std::sin(a));
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
} // namespace

DEEPINFER_HOT void attend(const float* q, const float* kt, int64_t stride, const float* v,
                          int64_t nk, int64_t heads, int64_t kv_heads, int64_t d, float* scores,
                          float* out) {
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

DEEPINFER_HOT void attend_rows(const float* q, const float* k, const float* v, int64_t nk,
                               int64_t heads, int64_t kv_heads, int64_t d, float* scores,
                               float* out) {
  const int64_t group = heads / kv_heads, kvw = kv_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    for (int64_t j = 0; j < nk; ++j)
      scores[j] = dot(qh, k + j * kvw + g * d, d) * scale;
    softmax_values(scores, nk, v, kvw, g, d, out + h * d);
  }
}

void put_column(float* kt, int64_t nk, int64_t j, const float* src, int64_t width) {
  for (int64_t i = 0; i < width; ++i)
    kt[i * nk + j] = src[i];
}

namespace {

// The portable kernel: the same operations as the AVX-512 one, key by key.
void index_tile_scores_portable(const float* q, int64_t rows, int64_t heads, int64_t dim,
                                const float* w, const float* kt, float* out, int64_t stride) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < index_tile; ++j) {
      float s = 0.0f;
      for (int64_t h = 0; h < heads; ++h) {
        const float* qh = q + (r * heads + h) * dim;
        float acc = 0.0f;
        for (int64_t i = 0; i < dim; ++i)
          acc = std::fma(qh[i], kt[i * index_tile + j], acc);
        s = std::fma(w[h], std::max(acc, 0.0f), s);
      }
      out[r * stride + j] = s;
    }
}

// 32 keys per step (two vectors), every head of one query accumulated at once: 2 x H
// accumulators in registers, so the FMA units never wait on one chain.
template <int H>
__attribute__((target("avx512f"))) void index_tile_scores_avx512(
    const float* q, int64_t rows, int64_t dim, const float* w, const float* kt, float* out,
    int64_t stride) {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; ++r) {
    const float* qr = q + r * H * dim;
    for (int64_t j = 0; j < index_tile; j += 32) {
      __m512 a[H], b[H];
      for (int h = 0; h < H; ++h)
        a[h] = b[h] = zero;
      for (int64_t i = 0; i < dim; ++i) {
        const __m512 ka = _mm512_loadu_ps(kt + i * index_tile + j);
        const __m512 kb = _mm512_loadu_ps(kt + i * index_tile + j + 16);
        for (int h = 0; h < H; ++h) {
          const __m512 qh = _mm512_set1_ps(qr[h * dim + i]);
          a[h] = _mm512_fmadd_ps(qh, ka, a[h]);
          b[h] = _mm512_fmadd_ps(qh, kb, b[h]);
        }
      }
      __m512 sa = zero, sb = zero;
      for (int h = 0; h < H; ++h) {
        const __m512 wh = _mm512_set1_ps(w[h]);
        sa = _mm512_fmadd_ps(wh, _mm512_mask_max_ps(zero, 0xFFFF, a[h], zero), sa);
        sb = _mm512_fmadd_ps(wh, _mm512_mask_max_ps(zero, 0xFFFF, b[h], zero), sb);
      }
      _mm512_storeu_ps(out + r * stride + j, sa);
      _mm512_storeu_ps(out + r * stride + j + 16, sb);
    }
  }
}

const bool has_avx512 = __builtin_cpu_supports("avx512f");

} // namespace

void index_tile_scores(const float* q, int64_t rows, int64_t heads, int64_t dim, const float* w,
                       const float* kt, float* out, int64_t stride) {
  // The common head counts get a kernel with the heads unrolled (tiny and small: 4).
  if (has_avx512 && heads == 4)
    index_tile_scores_avx512<4>(q, rows, dim, w, kt, out, stride);
  else if (has_avx512 && heads == 8)
    index_tile_scores_avx512<8>(q, rows, dim, w, kt, out, stride);
  else
    index_tile_scores_portable(q, rows, heads, dim, w, kt, out, stride);
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

// Positions with a score >= t (vectorizes: a compare and a sum).
DEEPINFER_HOT int64_t count_at_least(const float* scores, int64_t n, float t) {
  int64_t c = 0;
  for (int64_t j = 0; j < n; ++j)
    c += scores[j] >= t ? 1 : 0;
  return c;
}

// Writes the positions with a score >= t to `out`, ascending; returns how many. Blocks with no
// such score are skipped by a vectorized test.
DEEPINFER_HOT int64_t collect_at_least(const float* scores, int64_t n, float t, int64_t* out) {
  constexpr int64_t block = 64;
  int64_t m = 0, j0 = 0;
  for (; j0 + block <= n; j0 += block) {
    int any = 0;
    for (int64_t j = j0; j < j0 + block; ++j)
      any |= scores[j] >= t ? 1 : 0;
    if (any != 0)
      for (int64_t j = j0; j < j0 + block; ++j)
        if (scores[j] >= t)
          out[m++] = j;
  }
  for (int64_t j = j0; j < n; ++j)
    if (scores[j] >= t)
      out[m++] = j;
  return m;
}

// The radix path: exact whatever the distribution of the scores.
void top_k_radix(const float* scores, int64_t n, int64_t k, int64_t* out, uint32_t* keys);

} // namespace

void top_k_positions(const float* scores, int64_t n, int64_t k, int64_t* out, uint32_t* keys) {
  // A threshold from a strided sample, then a vectorized count: when at least k positions reach
  // it, they hold the top k, and the selection runs among those few only. The result is the
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
    if (const int64_t count = count_at_least(scores, n, t); count >= k) {
      thread_local std::vector<int64_t> cand;
      cand.resize(static_cast<std::size_t>(count));
      collect_at_least(scores, n, t, cand.data());
      auto better = [&](int64_t a, int64_t b) {
        return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
      };
      std::nth_element(cand.begin(), cand.begin() + k, cand.end(), better);
      std::sort(cand.begin(), cand.begin() + k);
      std::copy(cand.begin(), cand.begin() + k, out);
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
