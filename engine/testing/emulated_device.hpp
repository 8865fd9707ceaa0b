#pragma once

// A `device_api` on host memory, for testing `device_backend` (the CUDA backend's host side: its
// staging, output layouts, weight cache and trips) on machines without a GPU. Its kernels are the
// CPU kernels in the device kernels' order (products as FMA chains over k, the canonical exp), so
// a backend on it must give the CPU backend's bits exactly; that the device kernels themselves
// keep that order is cuda_kernels_emulated.test.cpp's business.
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "engine/backends/device_api.hpp"
#include "engine/kernels/kernel_table.hpp"

namespace deepinfer::engine::testing {

class emulated_device final : public device_api {
public:
  std::string name() const override { return "emulated device"; }
  void make_current() override {}

  std::size_t free_bytes() const override { return capacity_bytes - live_floats() * sizeof(float); }
  std::size_t total_bytes() const override { return capacity_bytes; }
  float* allocate(std::size_t floats) override { return track(new float[floats], floats); }
  void release(float* p) override { untrack(p); }
  float* allocate_pinned(std::size_t floats) override { return track(new float[floats], floats); }
  void release_pinned(float* p) override { untrack(p); }

  // Copies run at once: the stream's order is the call order, as on the device.
  void copy_to_device(float* dst, const float* src, std::size_t floats) override {
    std::memcpy(dst, src, floats * sizeof(float));
  }
  void copy_to_host(float* dst, const float* src, std::size_t floats) override {
    std::memcpy(dst, src, floats * sizeof(float));
  }
  void wait() override { ++waits; }

  void gemm(const float* x, int64_t m, int64_t k, const float* wt, int64_t n, float* y, bool accumulate) override {
    // Panels of wt (a weight: kept until released) for the CPU kernels: the same chains.
    std::vector<float>* panels = nullptr;
    {
      std::lock_guard g{mtx_};
      panels = &panels_[wt];
    }
    if (panels->empty()) {
      std::vector<float> w(static_cast<std::size_t>(n * k));
      for (int64_t c = 0; c < k; ++c)
        for (int64_t j = 0; j < n; ++j)
          w[static_cast<std::size_t>(j * k + c)] = wt[c * n + j];
      panels->resize(static_cast<std::size_t>((n + kernels::panel_width - 1) / kernels::panel_width *
                                              kernels::panel_width * k));
      kernels::pack_panels(w.data(), n, k, panels->data());
    }
    kernels::kernels_for(kernels::best_cpu_isa()).gemm_packed(x, m, k, panels->data(), n, y, n, accumulate);
  }
  void transpose(const float* w, int64_t n, int64_t k, float* wt) override {
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c)
        wt[c * n + r] = w[r * k + c];
  }
  void silu_mul(float* a, const float* b, int64_t n) override {
    kernels::kernels_for(kernels::cpu_isa::portable).silu_mul(a, b, n);
  }

  /// The memory the emulated device says it has (only `free_bytes` reads it).
  std::size_t capacity_bytes = std::size_t{16} << 30;
  /// Waits so far (one per trip of the backend, one per weight upload).
  std::atomic<uint64_t> waits{0};
  /// Floats allocated and not released.
  std::size_t live_floats() const {
    std::lock_guard g{mtx_};
    std::size_t n = 0;
    for (auto& [p, f] : live_)
      n += f;
    return n;
  }

  ~emulated_device() override {
    for (auto& [p, f] : live_)
      delete[] p;
  }

private:
  float* track(float* p, std::size_t floats) {
    std::lock_guard g{mtx_};
    live_[p] = floats;
    return p;
  }
  void untrack(float* p) {
    std::lock_guard g{mtx_};
    live_.erase(p);
    panels_.erase(p);
    delete[] p;
  }
  mutable std::mutex mtx_;
  std::map<const float*, std::size_t> live_;
  std::map<const float*, std::vector<float>> panels_;
};

} // namespace deepinfer::engine::testing
