// Fallback when the CUDA backend is not built: the query says so instead of failing to link.
#include "engine/backends/cuda_devices.hpp"

#ifndef DEEPINFER_HAVE_CUDA
namespace deepinfer::engine {

cuda_query_result query_cuda_devices() {
  cuda_query_result result;
  result.error = "this build has no CUDA backend (configure with -DDEEPINFER_CUDA=ON and nvcc on PATH)";
  return result;
}

} // namespace deepinfer::engine
#endif
