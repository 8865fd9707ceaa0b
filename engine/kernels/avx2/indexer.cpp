// AVX2 8-bit indexer kernels. The dot products are exact integer sums, as on VNNI: vpmaddubsw
// multiplies a key's unsigned codes (signed code + 128) by the query's 7-bit codes pairwise
// without saturating (index_query_limit), vpmaddwd sums each key's four into 32 bits, and the
// accumulators start at minus the query's offset: VNNI's integers, exactly.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

#include "engine/kernels/target_avx2.hpp"
#include "engine/kernels/avx2/vec.hpp"

namespace deepinfer::engine::kernels::avx2 {

namespace {

// K x 8 keys per step (K independent accumulator sets: more work between the loop's branches
// and the multiplies of several blocks in flight), every head of one row at once.
template <int H, int K>
void score_tile_heads(const index_query_codes& q, int64_t rows, int64_t dim, const uint8_t* codes,
                      const float* scales, float* out, int64_t stride) {
  const int64_t p = index_padded(dim), groups = p / index_group;
  const __m256i ones = _mm256_set1_epi16(1), zero = _mm256_setzero_si256();
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* qr = q.codes + r * H * p;
    __m256 coef[H];
    __m256i start[H];
#pragma GCC unroll 8
    for (int h = 0; h < H; ++h) {
      coef[h] = _mm256_set1_ps(q.coef[r * H + h]);
      start[h] = _mm256_set1_epi32(-q.offset[r * H + h]);
    }
    for (int64_t j = 0; j < index_tile; j += 8 * K) {
      __m256i acc[K][H];
#pragma GCC unroll 2
      for (int b = 0; b < K; ++b)
#pragma GCC unroll 8
        for (int h = 0; h < H; ++h)
          acc[b][h] = start[h];
      for (int64_t g = 0; g < groups; ++g) {
        __m256i c[K];
#pragma GCC unroll 2
        for (int b = 0; b < K; ++b)
          c[b] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + (g * index_tile + j + 8 * b) * index_group));
#pragma GCC unroll 8
        for (int h = 0; h < H; ++h) {
          int32_t lane = 0;
          std::memcpy(&lane, qr + h * p + g * index_group, sizeof(lane));
          const __m256i qv = _mm256_set1_epi32(lane);
#pragma GCC unroll 2
          for (int b = 0; b < K; ++b)
            acc[b][h] = _mm256_add_epi32(acc[b][h], _mm256_madd_epi16(_mm256_maddubs_epi16(c[b], qv), ones));
        }
      }
#pragma GCC unroll 2
      for (int b = 0; b < K; ++b) {
        __m256 sum = _mm256_setzero_ps();
#pragma GCC unroll 8
        for (int h = 0; h < H; ++h)
          sum = _mm256_fmadd_ps(coef[h], _mm256_cvtepi32_ps(_mm256_max_epi32(acc[b][h], zero)), sum);
        _mm256_storeu_ps(out + r * stride + j + 8 * b, _mm256_mul_ps(sum, _mm256_loadu_ps(scales + j + 8 * b)));
      }
    }
  }
}

} // namespace

void index_key_record(const float* k, int64_t dim, uint8_t* record) {
  if (dim % 8 != 0) {
    portable::index_key_record(k, dim, record);
    return;
  }
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 amax = _mm256_setzero_ps();
  for (int64_t i = 0; i < dim; i += 8)
    amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(k + i), abs_mask));
  const float m = hmax(amax);
  if (!(m > 0.0f)) {
    portable::index_key_record(k, dim, record);
    return;
  }
  const __m256 inv = _mm256_set1_ps(127.0f / m);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  for (int64_t i = 0; i < dim; i += 8) {
    // cvtps rounds to nearest even (the default MXCSR), as nearbyint does; the packs saturate
    // nothing (the codes are in [-127, 127] already), they only narrow to bytes.
    __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(k + i), inv));
    v = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
    const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(v, v), v); // bytes 0-3 of each 128-bit lane
    const uint32_t first = static_cast<uint32_t>(_mm256_extract_epi32(b, 0)) ^ 0x80808080u; // + 128
    const uint32_t second = static_cast<uint32_t>(_mm256_extract_epi32(b, 4)) ^ 0x80808080u;
    std::memcpy(record + i, &first, sizeof(first));
    std::memcpy(record + i + 4, &second, sizeof(second));
  }
  const float scale = m / 127.0f;
  std::memcpy(record + dim, &scale, sizeof(scale));
}

void index_score_tile(const index_query_codes& q, int64_t rows, int64_t heads, int64_t dim,
                      const uint8_t* codes, const float* scales, float* out, int64_t stride) {
  // The common head counts get the heads unrolled (tiny and small: 4).
  if (heads == 4)
    score_tile_heads<4, 2>(q, rows, dim, codes, scales, out, stride);
  else if (heads == 8)
    score_tile_heads<8, 1>(q, rows, dim, codes, scales, out, stride);
  else
    portable::index_score_tile(q, rows, heads, dim, codes, scales, out, stride);
}

} // namespace deepinfer::engine::kernels::avx2

#include "engine/kernels/target_end.hpp"
