#include "engine/model/indexer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace deepinfer::engine::indexer {

namespace {

/// Symmetric codes of v [n] in [-limit, limit]; returns the scale (0 for a zero vector).
float quantize(const float* v, int64_t n, float limit, int8_t* out) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    amax = std::max(amax, std::fabs(v[i]));
  if (!(amax > 0.0f)) {
    std::fill(out, out + n, int8_t{0});
    return 0.0f;
  }
  const float inv = limit / amax;
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<int8_t>(std::clamp(std::nearbyint(v[i] * inv), -limit, limit));
  return amax / limit;
}

} // namespace

void put_zero_key(int64_t dim, int64_t j, uint8_t* codes, float* scales) {
  scales[j] = 0.0f;
  for (int64_t i = 0; i < kernels::index_padded(dim); ++i)
    codes[kernels::index_code_at(i, j)] = 128;
}

void put_record(const uint8_t* record, int64_t dim, int64_t j, uint8_t* codes, float* scales) {
  const int64_t p = kernels::index_padded(dim);
  for (int64_t g = 0; g < p; g += kernels::index_group)
    std::memcpy(codes + kernels::index_code_at(g, j), record + g, kernels::index_group);
  std::memcpy(scales + j, record + p, sizeof(float));
}

void quantize_queries(const float* q, int64_t rows, int64_t heads, int64_t dim, const float* w,
                      const query_codes& out) {
  const int64_t p = kernels::index_padded(dim);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t rh = r * heads + h;
      int8_t* c = out.codes + rh * p;
      std::fill(c, c + p, int8_t{0});
      const float s = quantize(q + rh * dim, dim, static_cast<float>(kernels::index_query_limit), c);
      int32_t sum = 0;
      for (int64_t i = 0; i < p; ++i)
        sum += c[i];
      out.coef[rh] = w[h] * s;
      out.offset[rh] = 128 * sum;
    }
}

} // namespace deepinfer::engine::indexer
