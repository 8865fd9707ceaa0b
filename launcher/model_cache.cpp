#include "launcher/model_cache.hpp"

#include <filesystem>
#include <unistd.h>

#include "engine/model/model_config.hpp"
#include "engine/model/random_model.hpp"
#include "launcher/log.hpp"

namespace deepinfer::launcher {

model_source locate_model(const std::string& model) {
  std::error_code ec;
  if (!model.empty() && std::filesystem::is_regular_file(std::filesystem::path{model} / "config.json", ec))
    return model_source::directory;
  if (model.empty() || engine::model_config::preset(model))
    return model_source::preset;
  return model_source::missing;
}

model_cache_result ensure_preset_model(const std::string& cache_dir, const std::string& name, uint64_t seed) {
  namespace fs = std::filesystem;
  model_cache_result out;
  const auto found = engine::model_config::preset(name);
  if (!found) {
    out.error = "no model preset named '" + name + "' (tiny, small, bench_v4)";
    return out;
  }
  const auto& preset = *found;
  // A model with a vision encoder (tiny, issue 21) lives apart from a text-only one of the same
  // name: builds without the encoder share the cache directory, and the vision tensors change
  // the fingerprint they would check the text-only weights against.
  fs::path dir = fs::path{cache_dir} / "models" / (preset.vision.enabled() ? name + "-vision" : name);
  out.dir = dir.string();
  std::error_code ec;
  if (fs::exists(dir / "config.json", ec) && fs::exists(dir / "model.safetensors", ec)) {
    // A preset model made by an older build for another KV layout or dtype is made again (it is
    // seeded: the same weights for the same shape), rather than refused at load or served in a
    // form the preset no longer has.
    auto cfg = engine::load_config_file((dir / "config.json").string());
    if (cfg.config && cfg.config->made_for_kv_layout == preset.kv_layout() &&
        cfg.config->vision.enabled() == preset.vision.enabled() && cfg.config->dtype == preset.dtype)
      return out;
    log().info("the {} model in {} was made for another KV layout or dtype; making it again", name, out.dir);
    auto stale = dir.parent_path() / ("." + name + ".stale." + std::to_string(::getpid()));
    fs::rename(dir, stale, ec);
    fs::remove_all(stale, ec);
  }
  fs::create_directories(dir.parent_path(), ec);
  auto tmp = dir.parent_path() / ("." + name + ".tmp." + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  log().info("writing the {} model (seed {}) to {} (first run only)", name, seed, out.dir);
  if (auto err = engine::random_model::write(preset, seed, tmp.string()); !err.empty()) {
    out.error = "cannot write the " + name + " model: " + err;
    return out;
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    // Another process won the race: use its copy.
    fs::remove_all(tmp, ec);
    if (!fs::exists(dir / "model.safetensors"))
      out.error = "cannot place the " + name + " model at " + out.dir;
  }
  return out;
}

} // namespace deepinfer::launcher
