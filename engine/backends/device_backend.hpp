#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>

#include "engine/backends/backend.hpp"
#include "engine/backends/cpu/cpu_backend.hpp"
#include "engine/backends/device_api.hpp"
#include "engine/backends/weight_key.hpp"

namespace deepinfer::engine {

/// Matrix products on an accelerator (`device_api`: CUDA, or its emulation in tests), the rest on
/// the host kernels. Every product's output equals the CPU backend's bit for bit (the device's
/// products keep the canonical order), so a rank on a GPU and a rank on a CPU of any ISA serve
/// the same tokens, and reroutes and cache hits across them change nothing.
///
/// Weights are uploaded once (transposed to [k x n], so a warp reads neighbouring outputs'
/// weights together) and kept, keyed by their host buffer, until released.
///
/// NOTE: this is the backend's first stage: activations live in host buffers (the forward's), so
/// each trip stages its input to the device and its outputs back through pinned buffers, once
/// per group of products that share an input (q/k/v, an expert's gated MLP with its gate on the
/// device); the attention, indexer, norms and routing run on the host kernels. Moving the
/// forward's activations and those kernels onto the device is what lifts the copies.
class device_backend final : public backend {
public:
  /// Host-side settings (the kernels the forward runs on its host buffers).
  struct config {
    int threads = 2;
    std::optional<kernels::cpu_isa> isa;
  };

  device_backend(const config& cfg, std::unique_ptr<device_api> device);
  ~device_backend() override;

  std::string name() const override;
  const kernels::kernel_table& kernels() const override { return host_.kernels(); }
  void matmul(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y, bool accumulate) override;
  void matmul_shared_input(const float* x, int64_t m, int64_t k, std::span<const product> products) override;
  void gated_mlp(const float* x, int64_t m, int64_t h, const float* w1, const float* w3, int64_t f, const float* w2,
                 float* out, bool accumulate, float* g, float* u) override;
  void gated_mlps(const float* x, int64_t h, int64_t f, std::span<const expert_mlp> experts, float* out, float* g,
                  float* u) override;
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) override { host_.parallel_for(n, fn); }
  void prepare_weight(const float* w, int64_t n, int64_t k) override;
  void release_weight(const float* w, int64_t n, int64_t k) override;
  std::size_t prepared_weight_bytes() const override;
  /// Refuses weights that would leave less than `staging_reserve` of the device free.
  std::string check_weight_room(std::size_t bytes) const override;
  /// Device memory kept free for staging and kernels beyond the weights (bytes).
  static constexpr std::size_t staging_reserve = std::size_t{512} << 20;
  matmul_stats stats() const override;
  int workers() const override { return host_.workers(); }
  int worker_index() const override { return host_.worker_index(); }

  /// Round trips to the device so far (each: copies in, kernels, copies out, one wait).
  uint64_t trips() const;

private:
  /// Floats that only grow, on the device or pinned on the host.
  struct staging {
    float* data = nullptr;
    std::size_t floats = 0;
  };
  void reserve(staging& s, std::size_t floats, bool pinned);
  void stage_in(const float* x, std::size_t in, std::size_t out);
  void copy_in(const float* host, float* pinned, float* device, std::size_t n);
  void copy_out_and_wait(const float* device, std::size_t n);
  /// One trip for `gated_mlp` (one expert, maybe accumulating) and `gated_mlps`.
  void mlp_trip(const float* x, int64_t h, int64_t f, std::span<const expert_mlp> experts, float* out,
                bool accumulate);
  const float* device_weight(const float* w, int64_t n, int64_t k);
  void count(int64_t m, int64_t k, int64_t n);

  std::unique_ptr<device_api> device_;
  cpu_backend host_;
  mutable std::mutex mtx_;
  std::unordered_map<weight_key, float*, weight_key_hash> weights_;
  std::size_t weight_bytes_ = 0;
  staging dx_, dy_, hx_, hy_;
  matmul_stats stats_;
  uint64_t trips_ = 0;
};

} // namespace deepinfer::engine
