// The first translation unit of the CUDA backend: compiled by nvcc and linked against cudart.
#include "engine/backends/cuda_devices.hpp"

#include <cuda_runtime.h>

namespace deepinfer::engine {

cuda_query_result query_cuda_devices() {
  cuda_query_result result;
  result.built_with_cuda = true;
  int count = 0;
  if (auto rc = cudaGetDeviceCount(&count); rc != cudaSuccess) {
    result.error = cudaGetErrorString(rc);
    return result;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (auto rc = cudaGetDeviceProperties(&prop, i); rc != cudaSuccess) {
      result.error = cudaGetErrorString(rc);
      continue;
    }
    result.devices.push_back(
      {i, prop.name, prop.totalGlobalMem, prop.major, prop.minor});
  }
  return result;
}

} // namespace deepinfer::engine
