#pragma once

#include <cstdint>
#include <string>

namespace deepinfer::launcher {

/// Result of `ensure_preset_model`: the model directory, or an error.
struct model_cache_result {
  std::string dir;
  std::string error;
};

/// What a manifest's `model` (or --model) names on this machine.
enum class model_source {
  directory, ///< a model directory here (it has config.json)
  preset,    ///< a preset's seeded model (empty: tiny), made in the cache by ensure_preset_model
  missing,   ///< neither: a serving node here cannot start (exit status 78)
};

/// A directory with config.json wins over a preset of the same name.
model_source locate_model(const std::string& model);

/// The preset `locate_model` found: `model`, or "tiny" for an empty one.
inline std::string preset_name(const std::string& model) {
  return model.empty() ? "tiny" : model;
}

/// Makes sure `<cache_dir>/models/<name>` holds the seeded model of the preset `name` ("tiny",
/// "small", "bench_v4": engine::model_config::preset; the tiny one, which has a vision encoder,
/// in `models/tiny-vision`), writing it on first use into a temporary directory renamed into
/// place, so an interrupted run never leaves half a model and later starts reuse it at once. An
/// unknown name is an error.
model_cache_result ensure_preset_model(const std::string& cache_dir, const std::string& name, uint64_t seed = 1);

} // namespace deepinfer::launcher
