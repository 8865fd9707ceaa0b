#include "engine/backends/cpu/packed_gemm.hpp"

#include <xxhash.h>

#include "engine/kernels/kernel_table.hpp"

namespace deepinfer::engine {

struct packed_copy {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  std::size_t bytes() const { return f32.size() * sizeof(float) + bf16.size() * sizeof(uint16_t); }
  packed_panels panels() const {
    return bf16.empty() ? packed_panels{f32.data(), nullptr} : packed_panels{nullptr, bf16.data()};
  }
};

namespace {

std::shared_ptr<const packed_copy> pack(const float* w, int64_t n, int64_t k) {
  auto p = std::make_shared<packed_copy>();
  const int64_t panels = (n + kernels::panel_width - 1) / kernels::panel_width;
  const auto size = static_cast<std::size_t>(panels * kernels::panel_width * k);
  if (n * k * int64_t{sizeof(float)} > kernels::streamed_weight_bytes && kernels::all_bf16_values(w, n * k)) {
    p->bf16.resize(size);
    kernels::pack_panels_bf16(w, n, k, p->bf16.data());
  } else {
    p->f32.resize(size);
    kernels::pack_panels(w, n, k, p->f32.data());
  }
  return p;
}

/// The packed copies alive in this process, by the content they were packed from. An entry lives
/// as long as some `packed_gemm` holds its copy; the ranks of one process that load the same
/// model find each other's copies here instead of packing their own.
class copies_by_content {
public:
  std::shared_ptr<const packed_copy> get_or_pack(const float* w, int64_t n, int64_t k) {
    const auto h = XXH3_128bits(w, static_cast<std::size_t>(n * k) * sizeof(float));
    const key id{h.low64, h.high64, n, k};
    std::lock_guard guard{mtx_};
    if (auto it = copies_.find(id); it != copies_.end())
      if (auto alive = it->second.lock())
        return alive;
    // Packing under the lock: ranks loading together wait for the first one's copy (load time
    // only; a rank's products look up its own map, never this one).
    auto fresh = pack(w, n, k);
    std::erase_if(copies_, [](const auto& e) { return e.second.expired(); });
    copies_[id] = fresh;
    return fresh;
  }

private:
  struct key {
    uint64_t lo, hi;
    int64_t n, k;
    bool operator==(const key&) const = default;
  };
  struct key_hash {
    std::size_t operator()(const key& x) const { return static_cast<std::size_t>(x.lo); }
  };
  std::mutex mtx_;
  std::unordered_map<key, std::weak_ptr<const packed_copy>, key_hash> copies_;
};

copies_by_content& process_copies() {
  static copies_by_content copies;
  return copies;
}

} // namespace

void packed_panels::gemm(const kernels::kernel_table& kt, const float* x, int64_t rows, int64_t k, int64_t j0,
                         int64_t cols, float* y, int64_t ldy, bool accumulate) const {
  if (bf16)
    kt.gemm_packed_bf16(x, rows, k, bf16 + j0 * k, cols, y, ldy, accumulate);
  else
    kt.gemm_packed(x, rows, k, f32 + j0 * k, cols, y, ldy, accumulate);
}

packed_panels packed_gemm::packed(const float* w, int64_t n, int64_t k) {
  {
    std::lock_guard guard{mtx_};
    if (auto it = packed_.find(weight_key{w, n, k}); it != packed_.end())
      return it->second->panels();
  }
  auto copy = process_copies().get_or_pack(w, n, k);
  std::lock_guard guard{mtx_};
  auto [it, fresh] = packed_.try_emplace(weight_key{w, n, k}, std::move(copy));
  if (fresh)
    bytes_ += it->second->bytes();
  return it->second->panels();
}

void packed_gemm::release(const float* w, int64_t n, int64_t k) {
  std::lock_guard guard{mtx_};
  auto it = packed_.find(weight_key{w, n, k});
  if (it == packed_.end())
    return;
  bytes_ -= it->second->bytes();
  packed_.erase(it);
}

std::size_t packed_gemm::bytes() const {
  std::lock_guard guard{mtx_};
  return bytes_;
}

} // namespace deepinfer::engine
