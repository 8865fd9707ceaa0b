// The CUDA backend (issue 22): `device_api` on a CUDA device (cudart and the kernels of
// canonical_gemm.cu) under `device_backend`, and `make_cuda_backend`. Compiled with the project's
// C++ compiler and linked against cudart.
#include <cuda_runtime.h>

#include "engine/backends/cuda/canonical_gemm.hpp"
#include "engine/backends/cuda_devices.hpp"
#include "engine/backends/device_backend.hpp"
#include "engine/backends/make_backend.hpp"
#include "engine/log.hpp"
#include "recipe/base/assert.hpp"

namespace deepinfer::engine {

namespace {

/// A device failure mid-forward has no caller to return to (device_api's contract).
void check(cudaError_t rc, const char* what) {
  DEEPINFER_ASSERT(rc == cudaSuccess, "CUDA backend: {} failed: {} ({})", what, cudaGetErrorString(rc),
                   cudaGetErrorName(rc));
}

void check(int rc, const char* what) {
  check(static_cast<cudaError_t>(rc), what);
}

std::string cuda_failure(cudaError_t rc) {
  return std::string{cudaGetErrorString(rc)} + " (" + cudaGetErrorName(rc) + ")";
}

/// One device and one non-blocking stream: everything the backend enqueues runs in order.
class cuda_device_api final : public device_api {
public:
  cuda_device_api(int device, std::string device_name) : device_(device), device_name_(std::move(device_name)) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~cuda_device_api() override {
    cudaSetDevice(device_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda:" + std::to_string(device_) + " (" + device_name_ + ")"; }
  void make_current() override { check(cudaSetDevice(device_), "cudaSetDevice"); }

  std::size_t free_bytes() const override { return info().first; }
  std::size_t total_bytes() const override { return info().second; }

  float* allocate(std::size_t floats) override {
    void* p = nullptr;
    check(cudaMalloc(&p, floats * sizeof(float)), "cudaMalloc");
    return static_cast<float*>(p);
  }
  void release(float* p) override { check(cudaFree(p), "cudaFree"); }
  float* allocate_pinned(std::size_t floats) override {
    void* p = nullptr;
    check(cudaMallocHost(&p, floats * sizeof(float)), "cudaMallocHost");
    return static_cast<float*>(p);
  }
  void release_pinned(float* p) override { check(cudaFreeHost(p), "cudaFreeHost"); }

  void copy_to_device(float* dst, const float* src, std::size_t floats) override {
    check(cudaMemcpyAsync(dst, src, floats * sizeof(float), cudaMemcpyHostToDevice, stream_), "copy to device");
  }
  void copy_to_host(float* dst, const float* src, std::size_t floats) override {
    check(cudaMemcpyAsync(dst, src, floats * sizeof(float), cudaMemcpyDeviceToHost, stream_), "copy to host");
  }
  void wait() override { check(cudaStreamSynchronize(stream_), "the device's work"); }

  void gemm(const float* x, int64_t m, int64_t k, const float* wt, int64_t n, float* y, bool accumulate) override {
    check(cuda::canonical_gemm(x, m, k, wt, n, y, accumulate, stream_), "canonical_gemm launch");
  }
  void transpose(const float* w, int64_t n, int64_t k, float* wt) override {
    check(cuda::transpose(w, n, k, wt, stream_), "transpose launch");
  }
  void silu_mul(float* a, const float* b, int64_t n) override {
    check(cuda::silu_mul(a, b, n, stream_), "silu_mul launch");
  }

private:
  std::pair<std::size_t, std::size_t> info() const {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return {free, total};
  }
  int device_;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
};

} // namespace

backend_result make_cuda_backend(const backend_config& cfg) {
  const std::string fallback = "; run with --backend cpu (manifest: backend = \"cpu\"), or on a machine with an "
                               "NVIDIA GPU and its driver";
  const auto found = query_cuda_devices();
  if (found.devices.empty())
    return {nullptr, "no usable CUDA device: the CUDA runtime " +
                       (found.error.empty() ? std::string{"sees none"} : "says " + found.error) + fallback};
  const auto count = static_cast<int>(found.devices.size());
  const auto& dev = found.devices[static_cast<std::size_t>((cfg.device_slot % count + count) % count)];
  if (auto rc = cudaSetDevice(dev.index); rc != cudaSuccess)
    return {nullptr, "CUDA device " + std::to_string(dev.index) + ": " + cuda_failure(rc) + fallback};
  // Kernels built for sm_90 (and its PTX) do not run on older devices: say so now, not mid-forward.
  if (auto rc = static_cast<cudaError_t>(cuda::probe_launch()); rc != cudaSuccess)
    return {nullptr, "CUDA device " + std::to_string(dev.index) + " (" + dev.name + ", compute capability " +
                       std::to_string(dev.compute_capability_major) + "." +
                       std::to_string(dev.compute_capability_minor) +
                       ") cannot run this build's kernels (built for sm_90): " + cuda_failure(rc) + fallback};
  log().info("cuda backend: device={} name={} memory_gib={:.1f} cc={}.{}", dev.index, dev.name,
             static_cast<double>(dev.total_memory_bytes) / (1 << 30), dev.compute_capability_major,
             dev.compute_capability_minor);
  return {std::make_unique<device_backend>(device_backend::config{cfg.threads, cfg.isa},
                                           std::make_unique<cuda_device_api>(dev.index, dev.name)),
          {}};
}

} // namespace deepinfer::engine
