#pragma once

// The functions behind each ISA's kernel_table (kernel_table.cpp assembles the tables), declared
// once for the namespaces portable, avx2 and avx512. Only the kernel files include this.

#include "engine/kernels/kernel_table.hpp"

#define DEEPINFER_DECLARE_KERNELS                                                                  \
  void gemm_packed(const float* x, int64_t rows, int64_t k, const float* wp, int64_t n, float* y, \
                   int64_t ldy, bool accumulate);                                                  \
  void gemm_packed_bf16(const float* x, int64_t rows, int64_t k, const uint16_t* wp, int64_t n,    \
                        float* y, int64_t ldy, bool accumulate);                                   \
  float dot(const float* a, const float* b, int64_t n);                                            \
  void rms_norm(const float* x, int64_t n, int64_t h, const float* w, float eps, float* out);     \
  void silu_mul(float* a, const float* b, int64_t n);                                              \
  void sigmoid(const float* x, int64_t n, float* out);                                             \
  void exp_shifted(const float* x, int64_t n, float shift, float* out);                            \
  void axpy(float* x, const float* y, float s, int64_t n);                                         \
  void attend_rows(const float* q, int64_t rows, int64_t qstride, const int64_t* first,            \
                   const int64_t* count, const float* kt, int64_t stride, const float* v,          \
                   int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out);         \
  void attend_gathered(const float* q, const float* const* kv, int64_t v_offset, int64_t nk,       \
                       int64_t heads, int64_t kv_heads, int64_t d, float* scores, float* out);     \
  void index_key_record(const float* k, int64_t dim, uint8_t* record);                             \
  void index_score_tile(const index_query_codes& q, int64_t rows, int64_t heads, int64_t dim,      \
                        const uint8_t* codes, const float* scales, float* out, int64_t stride);    \
  void group_max_keys(const float* scores, int64_t groups, uint32_t* out);                         \
  int64_t count_keys_at_least(const uint32_t* keys, int64_t n, uint32_t t);                        \
  int64_t collect_at_least(const float* scores, int64_t n, float t, int64_t base, int64_t* out);

// Defines a namespace's gemm_packed and gemm_packed_bf16 from its function template `impl` over
// the panels' value type (float, or uint16_t for bf16).
#define DEEPINFER_DEFINE_GEMM_PACKED(impl)                                                         \
  void gemm_packed(const float* x, int64_t rows, int64_t k, const float* wp, int64_t n, float* y, \
                   int64_t ldy, bool accumulate) {                                                 \
    impl(x, rows, k, wp, n, y, ldy, accumulate);                                                   \
  }                                                                                                \
  void gemm_packed_bf16(const float* x, int64_t rows, int64_t k, const uint16_t* wp, int64_t n,    \
                        float* y, int64_t ldy, bool accumulate) {                                  \
    impl(x, rows, k, wp, n, y, ldy, accumulate);                                                   \
  }

namespace deepinfer::engine::kernels {
namespace portable {
DEEPINFER_DECLARE_KERNELS
} // namespace portable
namespace avx2 {
DEEPINFER_DECLARE_KERNELS
} // namespace avx2
namespace avx512 {
DEEPINFER_DECLARE_KERNELS
} // namespace avx512
} // namespace deepinfer::engine::kernels
