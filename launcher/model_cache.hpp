#pragma once

#include <cstdint>
#include <string>

namespace deepinfer::launcher {

/// Result of `ensure_preset_model`: the model directory, or an error.
struct model_cache_result {
  std::string dir;
  std::string error;
};

/// Makes sure `<cache_dir>/models/<name>` holds the seeded model of the preset `name` ("tiny",
/// "small", "bench_v4": engine::model_config::preset; the tiny one, which has a vision encoder,
/// in `models/tiny-vision`), writing it on first use into a temporary directory renamed into
/// place, so an interrupted run never leaves half a model and later starts reuse it at once. An
/// unknown name is an error.
model_cache_result ensure_preset_model(const std::string& cache_dir, const std::string& name, uint64_t seed = 1);

} // namespace deepinfer::launcher
