// The CUDA backend (issue 22), host side: device weights, staging and the backend interface.
// Compiled with the project's C++ compiler and linked against cudart; the kernels are in
// canonical_gemm.cu.
#include <chrono>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <cuda_runtime.h>

#include "engine/backends/cpu/cpu_backend.hpp"
#include "engine/backends/cuda/canonical_gemm.hpp"
#include "engine/backends/make_backend.hpp"
#include "engine/backends/weight_key.hpp"
#include "engine/log.hpp"
#include "recipe/base/assert.hpp"

namespace deepinfer::engine {

namespace {

/// A device failure in the middle of a forward has no caller to return to: the rank is broken,
/// and the instance (one communication domain) is restarted on its healthy ranks (DESIGN §3).
void check(cudaError_t rc, const char* what) {
  DEEPINFER_ASSERT(rc == cudaSuccess, "CUDA backend: {} failed: {} ({})", what, cudaGetErrorString(rc),
                   cudaGetErrorName(rc));
}

/// Floats that only grow, in device memory (`cudaMalloc`) or page-locked host memory
/// (`cudaMallocHost`: copies from it run at the link's speed and asynchronously with the host).
template <cudaError_t (*Allocate)(void**, std::size_t), cudaError_t (*Release)(void*)>
struct growing_buffer {
  float* data = nullptr;
  std::size_t floats = 0;
  void reserve(std::size_t n) {
    if (n <= floats)
      return;
    if (data != nullptr)
      check(Release(data), "free (staging)");
    check(Allocate(reinterpret_cast<void**>(&data), n * sizeof(float)), "allocation (staging)");
    floats = n;
  }
  ~growing_buffer() {
    if (data != nullptr)
      Release(data);
  }
};

cudaError_t allocate_device(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t allocate_pinned(void** p, std::size_t bytes) { return cudaMallocHost(p, bytes); }
using device_buffer = growing_buffer<allocate_device, cudaFree>;
using pinned_buffer = growing_buffer<allocate_pinned, cudaFreeHost>;

/// Matrix products on one CUDA device, the rest on the host kernels. Every product's output
/// equals the CPU backend's bit for bit (`cuda::canonical_gemm`), so a rank on a GPU and a rank
/// on a CPU of any ISA serve the same tokens, and reroutes and cache hits across them change
/// nothing.
///
/// NOTE: this is the backend's first stage: activations live in host buffers (the forward's), so
/// each product stages its input to the device and its output back through pinned buffers; the
/// attention, indexer, norms and routing run on the host kernels. Moving the forward's
/// activations and those kernels onto the device is what lifts the per-product copies.
class cuda_backend final : public backend {
public:
  cuda_backend(const backend_config& cfg, int device, std::string device_name)
      : device_(device), device_name_(std::move(device_name)),
        host_(cpu_backend::config{cfg.threads, cfg.isa}) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }

  ~cuda_backend() override {
    cudaSetDevice(device_);
    for (auto& [k, w] : weights_)
      cudaFree(w);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override {
    return "cuda:" + std::to_string(device_) + " (" + device_name_ + "; host kernels " + host_.name() + ")";
  }

  const kernels::kernel_table& kernels() const override { return host_.kernels(); }

  void matmul(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y,
              bool accumulate) override {
    if (m <= 0)
      return;
    const auto t0 = std::chrono::steady_clock::now();
    std::lock_guard lock{mtx_};
    check(cudaSetDevice(device_), "cudaSetDevice");
    const float* wt = device_weight(w, n, k);
    const auto xs = static_cast<std::size_t>(m * k), ys = static_cast<std::size_t>(m * n);
    dx_.reserve(xs);
    dy_.reserve(ys);
    hx_.reserve(xs);
    hy_.reserve(ys);
    // 1. stage the input (and the output to add to) through pinned memory
    std::memcpy(hx_.data, x, xs * sizeof(float));
    check(cudaMemcpyAsync(dx_.data, hx_.data, xs * sizeof(float), cudaMemcpyHostToDevice, stream_), "copy x");
    if (accumulate) {
      std::memcpy(hy_.data, y, ys * sizeof(float));
      check(cudaMemcpyAsync(dy_.data, hy_.data, ys * sizeof(float), cudaMemcpyHostToDevice, stream_), "copy y");
    }
    // 2. the product, 3. the output back
    check(static_cast<cudaError_t>(cuda::canonical_gemm(dx_.data, m, k, wt, n, dy_.data, accumulate, stream_)),
          "canonical_gemm launch");
    check(cudaMemcpyAsync(hy_.data, dy_.data, ys * sizeof(float), cudaMemcpyDeviceToHost, stream_), "copy y back");
    check(cudaStreamSynchronize(stream_), "canonical_gemm");
    std::memcpy(y, hy_.data, ys * sizeof(float));
    stats_.calls += 1;
    stats_.flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) override { host_.parallel_for(n, fn); }

  void prepare_weight(const float* w, int64_t n, int64_t k) override {
    std::lock_guard lock{mtx_};
    check(cudaSetDevice(device_), "cudaSetDevice");
    device_weight(w, n, k);
  }

  void release_weight(const float* w, int64_t n, int64_t k) override {
    std::lock_guard lock{mtx_};
    auto it = weights_.find(weight_key{w, n, k});
    if (it == weights_.end())
      return;
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaFree(it->second), "cudaFree (weight)");
    weight_bytes_ -= static_cast<std::size_t>(n * k) * sizeof(float);
    weights_.erase(it);
  }

  std::size_t prepared_weight_bytes() const override {
    std::lock_guard lock{mtx_};
    return weight_bytes_;
  }

  matmul_stats stats() const override { return stats_; }
  int workers() const override { return host_.workers(); }
  int worker_index() const override { return host_.worker_index(); }

private:
  /// The device copy of w [n x k], transposed to [k x n] (uploaded on first use). Holds mtx_.
  const float* device_weight(const float* w, int64_t n, int64_t k) {
    if (auto it = weights_.find(weight_key{w, n, k}); it != weights_.end())
      return it->second;
    const auto count = static_cast<std::size_t>(n * k);
    float* staged = nullptr;
    float* wt = nullptr;
    check(cudaMalloc(reinterpret_cast<void**>(&staged), count * sizeof(float)), "cudaMalloc (weight upload)");
    check(cudaMalloc(reinterpret_cast<void**>(&wt), count * sizeof(float)), "cudaMalloc (weight)");
    check(cudaMemcpyAsync(staged, w, count * sizeof(float), cudaMemcpyHostToDevice, stream_), "copy weight");
    check(static_cast<cudaError_t>(cuda::transpose(staged, n, k, wt, stream_)), "transpose launch");
    check(cudaStreamSynchronize(stream_), "weight upload");
    check(cudaFree(staged), "cudaFree (weight upload)");
    weights_.emplace(weight_key{w, n, k}, wt);
    weight_bytes_ += count * sizeof(float);
    return wt;
  }

  int device_;
  std::string device_name_;
  cpu_backend host_;
  cudaStream_t stream_ = nullptr;
  mutable std::mutex mtx_;
  std::unordered_map<weight_key, float*, weight_key_hash> weights_;
  std::size_t weight_bytes_ = 0;
  device_buffer dx_, dy_;
  pinned_buffer hx_, hy_;
  matmul_stats stats_;
};

std::string cuda_failure(cudaError_t rc) {
  return std::string{cudaGetErrorString(rc)} + " (" + cudaGetErrorName(rc) + ")";
}

} // namespace

backend_result make_cuda_backend(const backend_config& cfg) {
  const std::string fallback = "; run with --backend cpu (manifest: backend = \"cpu\"), or on a machine with an "
                               "NVIDIA GPU and its driver";
  int count = 0;
  if (auto rc = cudaGetDeviceCount(&count); rc != cudaSuccess)
    return {nullptr, "no usable CUDA device: the CUDA runtime says " + cuda_failure(rc) + fallback};
  if (count == 0)
    return {nullptr, "no usable CUDA device: the CUDA runtime sees none" + fallback};
  const int device = (cfg.device_slot % count + count) % count;
  cudaDeviceProp prop{};
  if (auto rc = cudaGetDeviceProperties(&prop, device); rc != cudaSuccess)
    return {nullptr, "CUDA device " + std::to_string(device) + ": " + cuda_failure(rc) + fallback};
  if (auto rc = cudaSetDevice(device); rc != cudaSuccess)
    return {nullptr, "CUDA device " + std::to_string(device) + ": " + cuda_failure(rc) + fallback};
  // Kernels built for sm_90 (and its PTX) do not run on older devices: say so now, not mid-forward.
  if (auto rc = static_cast<cudaError_t>(cuda::probe_launch()); rc != cudaSuccess)
    return {nullptr, "CUDA device " + std::to_string(device) + " (" + prop.name + ", compute capability " +
                       std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                       ") cannot run this build's kernels (built for sm_90): " + cuda_failure(rc) + fallback};
  log().info("cuda backend: device={} name={} memory_gib={:.1f} cc={}.{}", device, prop.name,
             static_cast<double>(prop.totalGlobalMem) / (1 << 30), prop.major, prop.minor);
  return {std::make_unique<cuda_backend>(cfg, device, prop.name), {}};
}

} // namespace deepinfer::engine
