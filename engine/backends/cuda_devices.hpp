#pragma once

#include <string>
#include <vector>

namespace deepinfer::engine {

/// One CUDA device as the runtime reports it.
struct cuda_device_info {
  int index = 0;
  std::string name;
  std::size_t total_memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

/// What a CUDA device query found.
struct cuda_query_result {
  /// False when this build has no CUDA backend (DEEPINFER_CUDA=OFF).
  bool built_with_cuda = false;
  /// Empty when the query succeeded (zero devices is a success); otherwise the runtime's message.
  std::string error;
  std::vector<cuda_device_info> devices;
};

/// Lists the CUDA devices visible to this process. Never throws; a machine without a driver or
/// GPU answers with an empty device list and the runtime's error text.
cuda_query_result query_cuda_devices();

} // namespace deepinfer::engine
