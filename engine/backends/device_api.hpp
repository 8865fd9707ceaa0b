#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace deepinfer::engine {

/// What `device_backend` asks of an accelerator: memory, copies and kernels on one in-order
/// stream, and a wait. `cuda/cuda_device_api.cpp` is the real one (cudart and the kernels of
/// canonical_gemm.cu); `engine/testing/emulated_device.hpp` runs the same calls on host memory, so
/// the backend's staging, layouts and weight cache are tested on machines without a GPU.
///
/// Every method is **required**. A failure has no caller to return to (it happens mid-forward):
/// implementations abort with the reason (`DEEPINFER_ASSERT`), which fails the rank and so its
/// instance, restarted on its healthy ranks (DESIGN §3).
class device_api {
public:
  virtual ~device_api() = default;

  /// "cuda:0 (NVIDIA H200)": for logs.
  virtual std::string name() const = 0;
  /// Makes the device current for the calling thread (the forward may run on several threads
  /// over its life: the rank's, a decode loop's).
  virtual void make_current() = 0;

  /// Device memory free now, and in all (bytes).
  virtual std::size_t free_bytes() const = 0;
  virtual std::size_t total_bytes() const = 0;

  /// Device memory of `floats` floats / its release.
  virtual float* allocate(std::size_t floats) = 0;
  virtual void release(float* p) = 0;
  /// Page-locked host memory (copies from it are asynchronous and at the link's speed).
  virtual float* allocate_pinned(std::size_t floats) = 0;
  virtual void release_pinned(float* p) = 0;

  /// Enqueues a copy of `floats` floats (host `src` must stay unchanged until `wait`).
  virtual void copy_to_device(float* dst, const float* src, std::size_t floats) = 0;
  virtual void copy_to_host(float* dst, const float* src, std::size_t floats) = 0;
  /// Returns once everything enqueued has run.
  virtual void wait() = 0;

  /// Enqueues y [m x n] (+)= x [m x k] . wt, wt [k x n], each output one FMA chain over k in
  /// order, then added to y when `accumulate` (canonical_gemm.hpp).
  virtual void gemm(const float* x, int64_t m, int64_t k, const float* wt, int64_t n, float* y, bool accumulate) = 0;
  /// Enqueues wt [k x n] = w [n x k] transposed.
  virtual void transpose(const float* w, int64_t n, int64_t k, float* wt) = 0;
  /// Enqueues a[i] = a[i] / (1 + exp(-a[i])) * b[i], the canonical exp.
  virtual void silu_mul(float* a, const float* b, int64_t n) = 0;
};

} // namespace deepinfer::engine
