#include "engine/kernels/kernel_table.hpp"

#include <algorithm>
#include <cstring>

#include "engine/kernels/kernel_functions.hpp"

namespace deepinfer::engine::kernels {

namespace {

#define DEEPINFER_KERNEL_TABLE(ns)                                                                 \
  kernel_table {                                                                                   \
    cpu_isa::ns, ns::gemm_packed, ns::gemm_packed_bf16, ns::dot, ns::rms_norm, ns::silu_mul, ns::sigmoid, \
        ns::exp_shifted, ns::axpy, ns::attend_rows, ns::attend_gathered, ns::index_key_record, ns::index_score_tile,        \
        ns::group_max_keys, ns::count_keys_at_least, ns::collect_at_least                          \
  }

const kernel_table portable_table = DEEPINFER_KERNEL_TABLE(portable);
const kernel_table avx2_table = DEEPINFER_KERNEL_TABLE(avx2);
// The element-wise functions gain nothing measurable from 512-bit vectors, and AVX2's group maxima
// are faster (one 32-score group is four 8-lane vectors; a 16-lane horizontal max costs more):
// AVX2's. bf16 panels are made only for weights streamed from memory, where AVX2's one panel at
// a time streams faster (see avx512::gemm_packed), and AVX-512 tiles over them were no faster
// for many rows on Zen 4 (bench/RESULTS.md): AVX2's too.
const kernel_table avx512_table{cpu_isa::avx512,        avx512::gemm_packed,
                                avx2::gemm_packed_bf16,
                                avx2::dot,
                                avx2::rms_norm,         avx2::silu_mul,
                                avx2::sigmoid,          avx2::exp_shifted,
                                avx2::axpy,
                                avx512::attend_rows,    avx512::attend_gathered,
                                avx512::index_key_record, avx512::index_score_tile,
                                avx2::group_max_keys,   avx512::count_keys_at_least,
                                avx512::collect_at_least};

} // namespace

const kernel_table& kernels_for(cpu_isa isa) {
  switch (isa) {
  case cpu_isa::avx2:
    return avx2_table;
  case cpu_isa::avx512:
    return avx512_table;
  case cpu_isa::portable:
    break;
  }
  return portable_table;
}

namespace {

// The panel layout, once: out[p][c][l] = as(w[(16p + l) * k + c]), zero past n.
template <typename T, typename As>
void pack_panels_as(const float* w, int64_t n, int64_t k, T* out, As as) {
  const int64_t panels = (n + panel_width - 1) / panel_width;
  std::fill(out, out + panels * panel_width * k, T{0});
  for (int64_t j = 0; j < n; ++j)
    for (int64_t c = 0; c < k; ++c)
      out[((j / panel_width) * k + c) * panel_width + j % panel_width] = as(w[j * k + c]);
}

} // namespace

void pack_panels(const float* w, int64_t n, int64_t k, float* out) {
  pack_panels_as(w, n, k, out, [](float v) { return v; });
}

bool all_bf16_values(const float* w, int64_t count) {
  uint32_t low = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, w + i, sizeof(bits));
    low |= bits & 0xFFFFu;
  }
  return low == 0;
}

void pack_panels_bf16(const float* w, int64_t n, int64_t k, uint16_t* out) {
  pack_panels_as(w, n, k, out, [](float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    return static_cast<uint16_t>(bits >> 16);
  });
}

} // namespace deepinfer::engine::kernels
