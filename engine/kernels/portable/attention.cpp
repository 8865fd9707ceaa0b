// Portable attention: the canonical orders themselves (canonical.hpp).
#include <cmath>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_functions.hpp"

namespace deepinfer::engine::kernels::portable {

namespace {

// scores[j] = exp(scores[j] - max); returns 1 / their sum16 (the softmax's normalizer).
float exp_shifted(float* scores, int64_t nk) {
  float top = -INFINITY;
  for (int64_t j = 0; j < nk; ++j)
    top = scores[j] > top ? scores[j] : top;
  for (int64_t j = 0; j < nk; ++j)
    scores[j] = canonical::exp(scores[j] - top);
  return 1.0f / canonical::sum16(scores, nk);
}

// oh[i] = chain over j of (scores[j] * inv) x value_j[i], value j at rows[j] (stride apart when
// `rows` is null: v + j * stride).
void weighted_values(const float* scores, float inv, int64_t nk, const float* v, int64_t stride,
                     const float* const* rows, int64_t offset, int64_t d, float* oh) {
  for (int64_t i = 0; i < d; ++i)
    oh[i] = 0.0f;
  for (int64_t j = 0; j < nk; ++j) {
    const float wj = scores[j] * inv;
    const float* vj = (rows != nullptr ? rows[j] : v + j * stride) + offset;
    for (int64_t i = 0; i < d; ++i)
      oh[i] = std::fma(wj, vj[i], oh[i]);
  }
}

} // namespace

namespace {

// One row over its `nk` keys (kt's first nk columns, v's first nk rows).
void attend(const float* q, const float* kt, int64_t stride, const float* v, int64_t nk,
            int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  const int64_t group = heads / kv_heads, kvw = kv_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    for (int64_t j = 0; j < nk; ++j) {
      float acc = 0.0f;
      for (int64_t i = 0; i < d; ++i)
        acc = std::fma(qh[i], kt[(g * d + i) * stride + j], acc);
      scores[j] = acc * scale;
    }
    const float inv = exp_shifted(scores, nk);
    weighted_values(scores, inv, nk, v, kvw, nullptr, g * d, d, out + h * d);
  }
}

} // namespace

void attend_rows(const float* q, int64_t rows, int64_t qstride, const int64_t* first,
                 const int64_t* count, const float* kt, int64_t stride, const float* v,
                 int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    attend(q + r * qstride, kt + first[r], stride, v + first[r] * kv_heads * d, count[r], heads,
           kv_heads, d, scores, out + r * qstride);
}

void attend_gathered(const float* q, const float* const* kv, int64_t v_offset, int64_t nk,
                     int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out) {
  const int64_t group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * d;
    const int64_t g = h / group;
    for (int64_t j = 0; j < nk; ++j)
      scores[j] = canonical::dot16(qh, kv[j] + g * d, d) * scale;
    const float inv = exp_shifted(scores, nk);
    weighted_values(scores, inv, nk, nullptr, 0, kv, v_offset + g * d, d, out + h * d);
  }
}

} // namespace deepinfer::engine::kernels::portable
