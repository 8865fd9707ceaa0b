#pragma once

#include <cstdint>
#include <string>

namespace deepinfer::launcher {

/// Result of `ensure_tiny_model`: the model directory, or an error.
struct model_cache_result {
  std::string dir;
  std::string error;
};

/// Makes sure `<cache_dir>/models/tiny` holds the seeded tiny model (config.json +
/// model.safetensors), writing it on first use into a temporary directory renamed into place, so
/// an interrupted run never leaves half a model and later starts reuse it at once.
model_cache_result ensure_tiny_model(const std::string& cache_dir, uint64_t seed = 1);

} // namespace deepinfer::launcher
