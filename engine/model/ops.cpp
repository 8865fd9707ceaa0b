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
// scores[j] = exp(scores[j] - top) for the `nk` scores whose maximum is `top`; returns the
// inverse of their sum (the softmax's normalizer). Every attention kernel's softmax.
inline float exp_shifted(float* scores, int64_t nk, float top) {
  float sum = 0.0f;
  for (int64_t j = 0; j < nk; ++j) {
    scores[j] = std::exp(scores[j] - top);
    sum += scores[j];
  }
  return 1.0f / sum;
}

inline float max_of(const float* scores, int64_t nk) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < nk; ++j)
    mx = std::max(mx, scores[j]);
  return mx;
}

// Softmax of one head's `scores` (already scaled) and the weighted sum of the values into `oh`.
inline void softmax_values(float* scores, int64_t nk, const float* v, int64_t kvw, int64_t g,
                           int64_t d, float* oh) {
  const float inv = exp_shifted(scores, nk, max_of(scores, nk));
  std::fill(oh, oh + d, 0.0f);
  for (int64_t j = 0; j < nk; ++j)
    axpy_into(oh, v + j * kvw + g * d, scores[j] * inv, d);
}

// The same over value rows found through pointers: value j is rows[j] + offset.
inline void softmax_gathered_values(float* scores, int64_t nk, const float* const* rows,
                                    int64_t offset, int64_t d, float* oh) {
  const float inv = exp_shifted(scores, nk, max_of(scores, nk));
  std::fill(oh, oh + d, 0.0f);
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
    const float inv = exp_shifted(scores, nk, _mm512_reduce_max_ps(mx));
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
      const float inv = exp_shifted(se, nk, mx[e]);
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

void silu_mul(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    a[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
}

DEEPINFER_HOT void axpy(float* x, const float* y, float s, int64_t n) {
  axpy_into(x, y, s, n);
}

} // namespace deepinfer::engine::ops
