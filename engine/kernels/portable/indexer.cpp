// Portable 8-bit indexer kernels: integer dot products, then the canonical f32 steps.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "engine/kernels/kernel_functions.hpp"

namespace deepinfer::engine::kernels::portable {

void index_key_record(const float* k, int64_t dim, uint8_t* record) {
  float amax = 0.0f;
  for (int64_t i = 0; i < dim; ++i)
    amax = std::max(amax, std::fabs(k[i]));
  const int64_t p = index_padded(dim);
  float scale = 0.0f;
  if (amax > 0.0f) {
    const float inv = 127.0f / amax;
    for (int64_t i = 0; i < p; ++i) {
      const float q = i < dim ? std::clamp(std::nearbyint(k[i] * inv), -127.0f, 127.0f) : 0.0f;
      record[i] = static_cast<uint8_t>(static_cast<int32_t>(q) + 128);
    }
    scale = amax / 127.0f;
  } else {
    std::fill(record, record + p, uint8_t{128});
  }
  std::memcpy(record + p, &scale, sizeof(scale));
}

void index_score_tile(const index_query_codes& q, int64_t rows, int64_t heads, int64_t dim,
                      const uint8_t* codes, const float* scales, float* out, int64_t stride) {
  const int64_t p = index_padded(dim);
  std::array<int32_t, index_tile> acc{};
  std::array<float, index_tile> s{};
  for (int64_t r = 0; r < rows; ++r) {
    s.fill(0.0f);
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t rh = r * heads + h;
      const int8_t* qh = q.codes + rh * p;
      acc.fill(0);
      for (int64_t i = 0; i < p; ++i) {
        const int32_t qi = qh[i];
        const uint8_t* ci = codes + index_code_at(i, 0);
        for (int64_t j = 0; j < index_tile; ++j)
          acc[static_cast<std::size_t>(j)] += qi * int32_t{ci[j * index_group]};
      }
      for (int64_t j = 0; j < index_tile; ++j) {
        const int32_t d = std::max(acc[static_cast<std::size_t>(j)] - q.offset[rh], 0);
        s[static_cast<std::size_t>(j)] =
            std::fma(q.coef[rh], static_cast<float>(d), s[static_cast<std::size_t>(j)]);
      }
    }
    for (int64_t j = 0; j < index_tile; ++j)
      out[r * stride + j] = s[static_cast<std::size_t>(j)] * scales[j];
  }
}

} // namespace deepinfer::engine::kernels::portable
