#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/backends/backend.hpp"
#include "engine/backends/backend_kind.hpp"
#include "engine/kernels/isa.hpp"

namespace deepinfer::engine {

/// What a rank's backend is made of.
struct backend_config {
  backend_kind kind = backend_kind::cpu;
  /// Host threads (counting the caller) for the work that stays on the CPU: everything on the
  /// CPU backend; on CUDA, the kernels the forward still runs on its host buffers.
  int threads = 2;
  /// CPU kernels; nullopt: the best this CPU runs. Precondition: supported.
  std::optional<kernels::cpu_isa> isa;
  /// CUDA only: which of the visible devices, taken modulo their count (a node's rank i passes i,
  /// so its ranks spread one per GPU).
  int device_slot = 0;
};

/// A backend, or why none could be made (`value` null and `error` set).
struct backend_result {
  std::unique_ptr<backend> value;
  std::string error;
};

/// Makes the backend `cfg` asks for. The CPU backend always succeeds; the CUDA backend fails with
/// a message naming what is missing (a build without CUDA, no driver, no device, a device these
/// kernels do not run on). Never throws.
backend_result make_backend(const backend_config& cfg);

/// The CUDA backend (engine/backends/cuda/): matrix products on the device with the same bits as
/// the CPU kernels (each output one FMA chain over k in order, `canonical.hpp`), weights kept on
/// the device; the rest of the forward on the host kernels of `cfg.isa`. Errors as `make_backend`.
backend_result make_cuda_backend(const backend_config& cfg);

} // namespace deepinfer::engine
