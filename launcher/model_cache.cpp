#include "launcher/model_cache.hpp"

#include <filesystem>
#include <unistd.h>

#include "engine/model/model_config.hpp"
#include "engine/model/random_model.hpp"
#include "launcher/log.hpp"

namespace deepinfer::launcher {

model_cache_result ensure_tiny_model(const std::string& cache_dir, uint64_t seed) {
  namespace fs = std::filesystem;
  model_cache_result out;
  // The tiny model with a vision encoder (issue 21) lives apart from the text-only one: builds
  // without the encoder share the cache directory, and the vision tensors change the
  // fingerprint they would check the text-only weights against.
  const auto preset = engine::model_config::tiny();
  fs::path dir = fs::path{cache_dir} / "models" / (preset.vision.enabled() ? "tiny-vision" : "tiny");
  out.dir = dir.string();
  std::error_code ec;
  if (fs::exists(dir / "config.json", ec) && fs::exists(dir / "model.safetensors", ec)) {
    // A tiny model made by an older build for another KV layout is made again (it is seeded:
    // the same weights), rather than refused at load.
    auto cfg = engine::load_config_file((dir / "config.json").string());
    if (cfg.config && cfg.config->made_for_kv_layout == preset.kv_layout() &&
        cfg.config->vision.enabled() == preset.vision.enabled())
      return out;
    log().info("the tiny model in {} was made for another KV layout; making it again", out.dir);
    auto stale = dir.parent_path() / (".tiny.stale." + std::to_string(::getpid()));
    fs::rename(dir, stale, ec);
    fs::remove_all(stale, ec);
  }
  fs::create_directories(dir.parent_path(), ec);
  auto tmp = dir.parent_path() / (".tiny.tmp." + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  log().info("writing the tiny model (seed {}) to {} (first run only)", seed, out.dir);
  if (auto err = engine::random_model::write(engine::model_config::tiny(), seed, tmp.string()); !err.empty()) {
    out.error = "cannot write the tiny model: " + err;
    return out;
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    // Another process won the race: use its copy.
    fs::remove_all(tmp, ec);
    if (!fs::exists(dir / "model.safetensors"))
      out.error = "cannot place the tiny model at " + out.dir;
  }
  return out;
}

} // namespace deepinfer::launcher
