#include "engine/backends/cpu/packed_gemm.hpp"

#include "engine/kernels/kernel_table.hpp"

namespace deepinfer::engine {

const float* packed_gemm::packed(const float* w, int64_t n, int64_t k) {
  std::lock_guard guard{mtx_};
  auto& p = packed_[weight_key{w, n, k}];
  if (p.empty()) {
    const int64_t panels = (n + kernels::panel_width - 1) / kernels::panel_width;
    p.resize(static_cast<std::size_t>(panels * kernels::panel_width * k));
    kernels::pack_panels(w, n, k, p.data());
    bytes_ += p.size() * sizeof(float);
  }
  return p.data();
}

void packed_gemm::release(const float* w, int64_t n, int64_t k) {
  std::lock_guard guard{mtx_};
  auto it = packed_.find(weight_key{w, n, k});
  if (it == packed_.end())
    return;
  bytes_ -= it->second.size() * sizeof(float);
  packed_.erase(it);
}

std::size_t packed_gemm::bytes() const {
  std::lock_guard guard{mtx_};
  return bytes_;
}

} // namespace deepinfer::engine
