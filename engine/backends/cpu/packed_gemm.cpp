#include "engine/backends/cpu/packed_gemm.hpp"

#include "engine/kernels/kernel_table.hpp"

namespace deepinfer::engine {

void packed_panels::gemm(const kernels::kernel_table& kt, const float* x, int64_t rows, int64_t k, int64_t j0,
                         int64_t cols, float* y, int64_t ldy, bool accumulate) const {
  if (bf16)
    kt.gemm_packed_bf16(x, rows, k, bf16 + j0 * k, cols, y, ldy, accumulate);
  else
    kt.gemm_packed(x, rows, k, f32 + j0 * k, cols, y, ldy, accumulate);
}

packed_panels packed_gemm::packed(const float* w, int64_t n, int64_t k) {
  std::lock_guard guard{mtx_};
  auto& p = packed_[weight_key{w, n, k}];
  if (p.f32.empty() && p.bf16.empty()) {
    const int64_t panels = (n + kernels::panel_width - 1) / kernels::panel_width;
    const auto size = static_cast<std::size_t>(panels * kernels::panel_width * k);
    if (n * k * int64_t{sizeof(float)} > kernels::streamed_weight_bytes && kernels::all_bf16_values(w, n * k)) {
      p.bf16.resize(size);
      kernels::pack_panels_bf16(w, n, k, p.bf16.data());
    } else {
      p.f32.resize(size);
      kernels::pack_panels(w, n, k, p.f32.data());
    }
    bytes_ += p.bytes();
  }
  return p.bf16.empty() ? packed_panels{p.f32.data(), nullptr} : packed_panels{nullptr, p.bf16.data()};
}

void packed_gemm::release(const float* w, int64_t n, int64_t k) {
  std::lock_guard guard{mtx_};
  auto it = packed_.find(weight_key{w, n, k});
  if (it == packed_.end())
    return;
  bytes_ -= it->second.bytes();
  packed_.erase(it);
}

std::size_t packed_gemm::bytes() const {
  std::lock_guard guard{mtx_};
  return bytes_;
}

} // namespace deepinfer::engine
