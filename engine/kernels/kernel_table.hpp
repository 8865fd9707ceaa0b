#pragma once

#include <cstdint>
#include <cstring>

#include "engine/kernels/index_codes.hpp"
#include "engine/kernels/isa.hpp"

namespace deepinfer::engine::kernels {

/// Output columns per packed weight panel: `pack_panels` lays a weight [n x k] out as
/// [ceil(n / 16)][k][16], zero past n.
inline constexpr int64_t panel_width = 16;

/// A weight larger than this is streamed from memory by a product of a few rows (the lm_head of
/// a decode step): its bytes, not its arithmetic, set the time.
inline constexpr int64_t streamed_weight_bytes = int64_t{1} << 20;

/// The f32 whose top half is `b` (bf16 is the top half of an f32, so this is exact).
inline float bf16_value(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f = 0.0f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// The CPU kernels of one ISA. Every entry gives the same bits on every ISA (canonical.hpp names
/// each order); preconditions are the same for all. Obtain one with `kernels_for`.
struct kernel_table {
  cpu_isa isa = cpu_isa::portable;

  /// y [rows x n] (+)= x [rows x k] . w^T, y's rows `ldy` floats apart, with `wp` the panels of w
  /// (`panel_width`; a column range of a wider product starts at its first panel); each output is
  /// one chain over k, added to y when `accumulate`. Every product of the forward, the lm_head
  /// too, runs this.
  void (*gemm_packed)(const float* x, int64_t rows, int64_t k, const float* wp, int64_t n,
                      float* y, int64_t ldy, bool accumulate);
  /// The same over panels of bf16 values (`pack_panels_bf16`): each weight is widened exactly,
  /// so the bits are those of `gemm_packed` over the f32 panels of the same values, with half
  /// the bytes to read.
  void (*gemm_packed_bf16)(const float* x, int64_t rows, int64_t k, const uint16_t* wp, int64_t n,
                           float* y, int64_t ldy, bool accumulate);

  /// dot16 of a[0..n) and b[0..n).
  float (*dot)(const float* a, const float* b, int64_t n);
  /// out[r] = x[r] * (1 / sqrt(dot16(x[r], x[r]) / h + eps)) * w for n rows of width h (out may
  /// alias x).
  void (*rms_norm)(const float* x, int64_t n, int64_t h, const float* w, float eps, float* out);
  /// a[i] = a[i] / (1 + exp(-a[i])) * b[i].
  void (*silu_mul)(float* a, const float* b, int64_t n);
  /// out[i] = 1 / (1 + exp(-x[i])).
  void (*sigmoid)(const float* x, int64_t n, float* out);
  /// out[i] = exp(x[i] - shift) (a softmax's numerators; the draft head's confidence feature).
  void (*exp_shifted)(const float* x, int64_t n, float shift, float* out);
  /// x[i] += s * y[i] (a product, then a sum: not fused).
  void (*axpy)(float* x, const float* y, float s, int64_t n);

  /// Grouped-query attention of `rows` query rows that share one span of keys (consecutive rows
  /// of one sequence's sliding windows): row r attends to span keys [first[r], first[r] +
  /// count[r]), first and the window ends nondecreasing in r. q [rows x heads x d] and out, rows
  /// `qstride` floats apart; kt the span's keys transposed, [kv_heads x d] rows of `stride`
  /// floats (key j in column j); v [span x kv_heads x d]. Per row: scores are chains over d
  /// times 1/sqrt(d), softmax with `exp` and sum16 over its own keys, each output a chain over
  /// its keys of weight x value; so a row's result does not depend on the other rows. `scores`
  /// needs rows * (window of the block + 32) floats.
  void (*attend_rows)(const float* q, int64_t rows, int64_t qstride, const int64_t* first,
                      const int64_t* count, const float* kt, int64_t stride, const float* v,
                      int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out);
  /// The same over keys found through pointers (the cross-attention's top-k picks): key j is
  /// kv[j] [kv_heads x d], its value kv[j] + v_offset; scores are dot16. `scores` needs
  /// heads * nk floats.
  void (*attend_gathered)(const float* q, const float* const* kv, int64_t v_offset, int64_t nk,
                          int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out);

  /// Quantizes key k [dim] into its record (`index_record_bytes`): symmetric 8-bit codes
  /// round(k * 127 / max|k|) + 128, padded with 128, then the scale max|k| / 127 (0 and all codes
  /// 128 for a zero key).
  void (*index_key_record)(const float* k, int64_t dim, uint8_t* record);
  /// Scores of `rows` quantized queries against one tile: out[r * stride + j] =
  /// (chain over heads of coef[r,h] x max(q[r,h] . k_j, 0)) x scale_j, the dot products exact.
  void (*index_score_tile)(const index_query_codes& q, int64_t rows, int64_t heads, int64_t dim,
                           const uint8_t* codes, const float* scales, float* out, int64_t stride);

  /// out[g] = order_key(max of scores[32g .. 32g + 32)) for g < groups.
  void (*group_max_keys)(const float* scores, int64_t groups, uint32_t* out);
  /// How many of keys[0..n) are >= t.
  int64_t (*count_keys_at_least)(const uint32_t* keys, int64_t n, uint32_t t);
  /// Writes base + j for each j < n with scores[j] >= t to `out`, ascending; returns how many.
  int64_t (*collect_at_least)(const float* scores, int64_t n, float t, int64_t base, int64_t* out);
};

/// The kernels of `isa` (precondition: `cpu_supports(isa)`).
const kernel_table& kernels_for(cpu_isa isa);

/// Lays w [n x k] out as `panel_width` panels for `gemm_packed` (ceil(n / 16) * 16 * k floats).
void pack_panels(const float* w, int64_t n, int64_t k, float* out);

/// Whether every one of w[0..count) is a bf16 value (its low 16 bits zero), so that
/// `pack_panels_bf16` keeps it exactly: a bf16 checkpoint widened to f32 at load.
bool all_bf16_values(const float* w, int64_t count);

/// `pack_panels` in bf16 (ceil(n / 16) * 16 * k values), for `gemm_packed_bf16`.
/// Precondition: `all_bf16_values(w, n * k)`.
void pack_panels_bf16(const float* w, int64_t n, int64_t k, uint16_t* out);

} // namespace deepinfer::engine::kernels
