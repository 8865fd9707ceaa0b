#pragma once

// The determinism contract of the CPU kernels (DESIGN.md §5.4): every reduction of the forward has
// one order, written here once in plain C++; the AVX2 and AVX-512 kernels emulate it exactly, so a
// row's result depends neither on the ISA nor on its batch, chunking or thread. The portable
// kernels are these functions; the tests compare every ISA against them bit for bit. Builds use
// -ffp-contract=off, so no compiler fuses a multiply and an add that is not written as std::fma.
//
// The orders:
// - chain: one fused multiply-add per term, in index order, from +0 (`acc = fma(a_i, b_i, acc)`).
//   Matrix products, the lm_head too (each output over k), attention scores over keys laid out
//   transposed (each score over the head's components) and attention values (each output
//   component over the keys).
// - dot16: 16 chains, lane l over the terms i = l (mod 16), the input padded with zeros to a
//   multiple of 16; then `fold16`. Dot products of contiguous rows: the cross-attention's gathered
//   scores, RMSNorm's sum of squares; `sum16` is the same with adds (the softmax's sum).
// - exp: `exp` below, one polynomial, in every softmax, sigmoid and SiLU.
// - integer dot products (the 8-bit indexer) are exact and so have no order.

#include <cmath>
#include <cstdint>
#include <cstring>

namespace deepinfer::engine::kernels::canonical {

/// Lanes of the dot16 order.
inline constexpr int lanes = 16;

/// Folds 16 partial sums: lane[i] += lane[i + h] for h = 8, 4, 2, 1; returns lane[0].
inline float fold16(float* lane) {
  for (int h = lanes / 2; h > 0; h /= 2)
    for (int i = 0; i < h; ++i)
      lane[i] += lane[i + h];
  return lane[0];
}

/// The dot16 dot product of a[0..n) and b[0..n).
inline float dot16(const float* a, const float* b, int64_t n) {
  float lane[lanes] = {};
  const int64_t padded = (n + lanes - 1) / lanes * lanes;
  for (int64_t i = 0; i < padded; ++i) {
    const float x = i < n ? a[i] : 0.0f, y = i < n ? b[i] : 0.0f;
    lane[i % lanes] = std::fma(x, y, lane[i % lanes]);
  }
  return fold16(lane);
}

/// The sum of a[0..n) in the dot16 order (adds where dot16 has fused multiply-adds by 1).
inline float sum16(const float* a, int64_t n) {
  float lane[lanes] = {};
  const int64_t padded = (n + lanes - 1) / lanes * lanes;
  for (int64_t i = 0; i < padded; ++i)
    lane[i % lanes] += i < n ? a[i] : 0.0f;
  return fold16(lane);
}

/// Bounds of `exp`'s argument: below `exp_min` the result is 0; above `exp_max` it is exp(exp_max).
inline constexpr float exp_min = -87.0f;
inline constexpr float exp_max = 88.0f;

/// Cephes' single-precision polynomial (about 1 ulp): exp(x) = 2^n (1 + r + r^2 P(r)) with
/// n = round(x / ln 2) and r = x - n ln 2 in two steps. Every ISA runs these operations.
inline float exp(float x) {
  if (x < exp_min)
    return 0.0f;
  x = x < exp_max ? x : exp_max; // a NaN becomes exp_max, as vector min does
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(n, -0.693359375f, x);
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float y = std::fma(p, r * r, r) + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale = 0.0f;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}

/// 1 / (1 + exp(-x)).
inline float sigmoid(float x) {
  return 1.0f / (1.0f + exp(-x));
}

/// Order-preserving map of a float to an unsigned key (-0 counts as +0, as comparisons do): the
/// top-k selection compares keys.
inline uint32_t order_key(float f) {
  uint32_t u = 0;
  f += 0.0f;
  std::memcpy(&u, &f, sizeof(u));
  return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}

/// The float whose order key is `key` (the inverse of order_key).
inline float from_order_key(uint32_t key) {
  const uint32_t u = (key & 0x80000000u) != 0 ? (key & 0x7FFFFFFFu) : ~key;
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

} // namespace deepinfer::engine::kernels::canonical
