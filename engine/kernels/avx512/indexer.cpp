// AVX-512 8-bit indexer kernels: 16 components of a key quantized per vector; scores by VNNI
// (`vpdpbusd`: four byte products per lane) where the CPU has it, else the AVX2 integer path
// (the same integers: exact sums have no order).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

namespace deepinfer::engine::kernels::avx512 {
namespace {
const bool has_vnni = __builtin_cpu_supports("avx512vnni");
} // namespace
} // namespace deepinfer::engine::kernels::avx512

#include "engine/kernels/target_avx512.hpp"
#include "engine/kernels/avx512/vec.hpp"

namespace deepinfer::engine::kernels::avx512 {

// The same codes as the portable kernel, 16 components at a time (round to nearest even, as
// nearbyint in the default rounding mode).
void index_key_record(const float* k, int64_t dim, uint8_t* record) {
  if (dim % 16 != 0) {
    avx2::index_key_record(k, dim, record);
    return;
  }
  __m512 amax = _mm512_setzero_ps();
  for (int64_t i = 0; i < dim; i += 16)
    amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_loadu_ps(k + i)));
  const float m = hmax(amax);
  if (!(m > 0.0f)) {
    portable::index_key_record(k, dim, record);
    return;
  }
  const __m512 inv = _mm512_set1_ps(127.0f / m);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80)); // + 128 on each byte
  for (int64_t i = 0; i < dim; i += 16) {
    __m512i v = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(k + i), inv),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(record + i), _mm_xor_si128(_mm512_cvtsepi32_epi8(v), flip));
  }
  const float scale = m / 127.0f;
  std::memcpy(record + dim, &scale, sizeof(scale));
}

} // namespace deepinfer::engine::kernels::avx512

#include "engine/kernels/target_end.hpp"

#include "engine/kernels/target_avx512vnni.hpp"

namespace deepinfer::engine::kernels::avx512 {

namespace {

// 32 keys per step (two vectors of 16 lanes), every head of one row at once: 2 x H integer
// accumulators, each `vpdpbusd` adding four byte products per lane.
template <int H>
void score_tile_vnni(const index_query_codes& q, int64_t rows, int64_t dim, const uint8_t* codes,
                     const float* scales, float* out, int64_t stride) {
  const int64_t p = index_padded(dim), groups = p / index_group;
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* qr = q.codes + r * H * p;
    __m512 coef[H];
    __m512i start[H]; // the accumulators start at minus the keys' +128 correction
#pragma GCC unroll 16
    for (int h = 0; h < H; ++h) {
      coef[h] = _mm512_set1_ps(q.coef[r * H + h]);
      start[h] = _mm512_set1_epi32(-q.offset[r * H + h]);
    }
    for (int64_t j = 0; j < index_tile; j += 32) {
      __m512i a[H], b[H];
#pragma GCC unroll 16
      for (int h = 0; h < H; ++h)
        a[h] = b[h] = start[h];
      for (int64_t g = 0; g < groups; ++g) {
        const uint8_t* cg = codes + (g * index_tile + j) * index_group;
        const __m512i ka = _mm512_loadu_si512(cg);
        const __m512i kb = _mm512_loadu_si512(cg + 16 * index_group);
#pragma GCC unroll 16
        for (int h = 0; h < H; ++h) {
          int32_t lane = 0;
          std::memcpy(&lane, qr + h * p + g * index_group, sizeof(lane));
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
        const __m512i da = _mm512_mask_max_epi32(zero, 0xFFFF, a[h], zero);
        const __m512i db = _mm512_mask_max_epi32(zero, 0xFFFF, b[h], zero);
        sa = _mm512_fmadd_ps(coef[h], _mm512_mask_cvtepi32_ps(fzero, 0xFFFF, da), sa);
        sb = _mm512_fmadd_ps(coef[h], _mm512_mask_cvtepi32_ps(fzero, 0xFFFF, db), sb);
      }
      _mm512_storeu_ps(out + r * stride + j, _mm512_mul_ps(sa, _mm512_loadu_ps(scales + j)));
      _mm512_storeu_ps(out + r * stride + j + 16, _mm512_mul_ps(sb, _mm512_loadu_ps(scales + j + 16)));
    }
  }
}

} // namespace

void index_score_tile(const index_query_codes& q, int64_t rows, int64_t heads, int64_t dim,
                      const uint8_t* codes, const float* scales, float* out, int64_t stride) {
  if (has_vnni && heads == 4)
    score_tile_vnni<4>(q, rows, dim, codes, scales, out, stride);
  else if (has_vnni && heads == 8)
    score_tile_vnni<8>(q, rows, dim, codes, scales, out, stride);
  else
    avx2::index_score_tile(q, rows, heads, dim, codes, scales, out, stride);
}

} // namespace deepinfer::engine::kernels::avx512

#include "engine/kernels/target_end.hpp"
