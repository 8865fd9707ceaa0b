#include "engine/model/indexer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <vector>

// GCC 12's AVX-512 headers start many intrinsics from an "undefined" vector and then warn that it
// is uninitialized (GCC bug 105593); the warning says nothing about this file's code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace deepinfer::engine::indexer {

namespace {

int64_t padded(int64_t dim) {
  return (dim + group - 1) / group * group;
}

/// Symmetric 8-bit codes of v [n] in [-127, 127]; returns the scale (0 for a zero vector).
float quantize(const float* v, int64_t n, int8_t* out) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    amax = std::max(amax, std::fabs(v[i]));
  if (!(amax > 0.0f)) {
    std::fill(out, out + n, int8_t{0});
    return 0.0f;
  }
  const float inv = 127.0f / amax;
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<int8_t>(std::clamp(std::nearbyint(v[i] * inv), -127.0f, 127.0f));
  return amax / 127.0f;
}

/// Byte of component i of slot j in a tile's code block.
inline int64_t code_at(int64_t i, int64_t j) {
  return ((i / group) * tile + j) * group + i % group;
}

} // namespace

namespace {

// The same codes as `quantize` + the +128 offset, 16 components at a time (round to nearest
// even, as nearbyint in the default rounding mode), for keys of whole 16-component vectors.
__attribute__((target("avx512f,avx512bw"))) void put_key_avx512(const float* k, int64_t dim,
                                                                int64_t j, uint8_t* codes,
                                                                float* scales) {
  __m512 amax = _mm512_setzero_ps();
  for (int64_t i = 0; i < dim; i += 16)
    amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_loadu_ps(k + i)));
  const float m = _mm512_reduce_max_ps(amax);
  if (!(m > 0.0f)) {
    put_zero_key(dim, j, codes, scales);
    return;
  }
  const __m512 inv = _mm512_set1_ps(127.0f / m);
  alignas(64) int8_t q[16];
  for (int64_t i = 0; i < dim; i += 16) {
    const __m512i v = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(k + i), inv),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_store_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(v));
    for (int64_t g = 0; g < 16 / group; ++g) {
      uint32_t lane = 0;
      std::memcpy(&lane, q + g * group, sizeof(lane));
      lane ^= 0x80808080u; // + 128 on each byte
      std::memcpy(codes + code_at(i + g * group, j), &lane, sizeof(lane));
    }
  }
  scales[j] = m / 127.0f;
}

const bool has_avx512bw = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");

} // namespace

void put_key(const float* k, int64_t dim, int64_t j, uint8_t* codes, float* scales) {
  if (has_avx512bw && dim % 16 == 0) {
    put_key_avx512(k, dim, j, codes, scales);
    return;
  }
  put_key_portable(k, dim, j, codes, scales);
}

void put_key_portable(const float* k, int64_t dim, int64_t j, uint8_t* codes, float* scales) {
  thread_local std::vector<int8_t> q;
  const int64_t p = padded(dim);
  q.assign(static_cast<std::size_t>(p), int8_t{0});
  scales[j] = quantize(k, dim, q.data());
  for (int64_t i = 0; i < p; ++i)
    codes[code_at(i, j)] = static_cast<uint8_t>(q[static_cast<std::size_t>(i)] + 128);
}

void put_zero_key(int64_t dim, int64_t j, uint8_t* codes, float* scales) {
  scales[j] = 0.0f;
  for (int64_t i = 0; i < padded(dim); ++i)
    codes[code_at(i, j)] = 128;
}

void quantize_queries(const float* q, int64_t rows, int64_t heads, int64_t dim, const float* w,
                      const query_codes& out) {
  const int64_t p = padded(dim);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t rh = r * heads + h;
      int8_t* c = out.codes + rh * p;
      std::fill(c, c + p, int8_t{0});
      const float s = quantize(q + rh * dim, dim, c);
      int32_t sum = 0;
      for (int64_t i = 0; i < p; ++i)
        sum += c[i];
      out.coef[rh] = w[h] * s;
      out.offset[rh] = 128 * sum;
    }
}

// Key by key over the same integers, then the same f32 operations in the same order as the
// VNNI kernel, so both give the same bits.
void score_tile_portable(const query_codes& q, int64_t rows, int64_t heads, int64_t dim,
                         const uint8_t* codes, const float* scales, float* out, int64_t stride) {
  const int64_t p = padded(dim);
  std::array<int32_t, tile> acc{};
  std::array<float, tile> s{};
  for (int64_t r = 0; r < rows; ++r) {
    s.fill(0.0f);
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t rh = r * heads + h;
      const int8_t* qh = q.codes + rh * p;
      acc.fill(0);
      for (int64_t i = 0; i < p; ++i) {
        const int32_t qi = qh[i];
        const uint8_t* ci = codes + (i / group) * tile * group + i % group;
        for (int64_t j = 0; j < tile; ++j)
          acc[static_cast<std::size_t>(j)] += qi * int32_t{ci[j * group]};
      }
      for (int64_t j = 0; j < tile; ++j) {
        const int32_t d = std::max(acc[static_cast<std::size_t>(j)] - q.offset[rh], 0);
        s[static_cast<std::size_t>(j)] = std::fma(q.coef[rh], static_cast<float>(d), s[static_cast<std::size_t>(j)]);
      }
    }
    for (int64_t j = 0; j < tile; ++j)
      out[r * stride + j] = s[static_cast<std::size_t>(j)] * scales[j];
  }
}

namespace {

// 32 keys per step (two vectors of 16 lanes), every head of one row at once: 2 x H integer
// accumulators, each `vpdpbusd` adding four byte products per lane.
template <int H>
__attribute__((target("avx512f,avx512vnni"))) void score_tile_vnni(
    const query_codes& q, int64_t rows, int64_t dim, const uint8_t* codes, const float* scales,
    float* out, int64_t stride) {
  const int64_t p = padded(dim), groups = p / group;
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* qr = q.codes + r * H * p;
    __m512 coef[H];
    __m512i off[H];
#pragma GCC unroll 16
    for (int h = 0; h < H; ++h) {
      coef[h] = _mm512_set1_ps(q.coef[r * H + h]);
      off[h] = _mm512_set1_epi32(q.offset[r * H + h]);
    }
    for (int64_t j = 0; j < tile; j += 32) {
      __m512i a[H], b[H];
#pragma GCC unroll 16
      for (int h = 0; h < H; ++h)
        a[h] = b[h] = zero;
      for (int64_t g = 0; g < groups; ++g) {
        const uint8_t* cg = codes + (g * tile + j) * group;
        const __m512i ka = _mm512_loadu_si512(cg);
        const __m512i kb = _mm512_loadu_si512(cg + 16 * group);
#pragma GCC unroll 16
        for (int h = 0; h < H; ++h) {
          int32_t lane = 0;
          std::memcpy(&lane, qr + h * p + g * group, sizeof(lane));
          const __m512i qv = _mm512_set1_epi32(lane);
          a[h] = _mm512_dpbusd_epi32(a[h], ka, qv);
          b[h] = _mm512_dpbusd_epi32(b[h], kb, qv);
        }
      }
      // The masked forms with a zero source: GCC 12 warns that the unmasked ones read an
      // undefined vector.
      const __m512 fzero = _mm512_setzero_ps();
      __m512 sa = fzero, sb = fzero;
#pragma GCC unroll 16
      for (int h = 0; h < H; ++h) {
        const __m512i da = _mm512_mask_max_epi32(zero, 0xFFFF, _mm512_sub_epi32(a[h], off[h]), zero);
        const __m512i db = _mm512_mask_max_epi32(zero, 0xFFFF, _mm512_sub_epi32(b[h], off[h]), zero);
        sa = _mm512_fmadd_ps(coef[h], _mm512_mask_cvtepi32_ps(fzero, 0xFFFF, da), sa);
        sb = _mm512_fmadd_ps(coef[h], _mm512_mask_cvtepi32_ps(fzero, 0xFFFF, db), sb);
      }
      _mm512_storeu_ps(out + r * stride + j, _mm512_mul_ps(sa, _mm512_loadu_ps(scales + j)));
      _mm512_storeu_ps(out + r * stride + j + 16,
                       _mm512_mul_ps(sb, _mm512_loadu_ps(scales + j + 16)));
    }
  }
}

const bool has_vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni");

} // namespace

void score_tile(const query_codes& q, int64_t rows, int64_t heads, int64_t dim,
                const uint8_t* codes, const float* scales, float* out, int64_t stride) {
  // The common head counts get a kernel with the heads unrolled (tiny and small: 4).
  if (has_vnni && heads == 4)
    score_tile_vnni<4>(q, rows, dim, codes, scales, out, stride);
  else if (has_vnni && heads == 8)
    score_tile_vnni<8>(q, rows, dim, codes, scales, out, stride);
  else
    score_tile_portable(q, rows, heads, dim, codes, scales, out, stride);
}

} // namespace deepinfer::engine::indexer
