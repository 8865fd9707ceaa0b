// Fallback when the CUDA backend is not built: asking for it is a clear error, not a link failure.
#include "engine/backends/make_backend.hpp"

#ifndef DEEPINFER_HAVE_CUDA
namespace deepinfer::engine {

backend_result make_cuda_backend(const backend_config&) {
  return {nullptr, "this build has no CUDA backend: rebuild with nvcc on PATH (the CUDA toolkit in "
                   "/usr/local/cuda) and -DDEEPINFER_CUDA=ON, or run with --backend cpu"};
}

} // namespace deepinfer::engine
#endif
