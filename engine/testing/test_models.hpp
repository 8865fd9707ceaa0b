#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "engine/model/model_config.hpp"
#include "engine/model/random_model.hpp"

namespace deepinfer::engine::testing {

/// A scratch directory under the build tree (or /tmp), unique per name and process.
inline std::string scratch_dir(const std::string& name) {
#ifdef DEEPINFER_BINARY_DIR
  std::string root = DEEPINFER_BINARY_DIR;
#else
  std::string root = "/tmp";
#endif
  auto dir = fmt::format("{}/engine_test_data/{}-{}", root, name, ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Writes (once per process) the seeded tiny model and returns its directory.
inline const std::string& tiny_model_dir() {
  static const std::string dir = [] {
    auto d = scratch_dir("tiny");
    auto err = random_model::write(model_config::tiny(), 7, d);
    if (!err.empty())
      std::abort();
    return d;
  }();
  return dir;
}

/// A config shaped like tiny with a small vocabulary, for tests that write many model files.
inline model_config micro_config() {
  auto c = model_config::tiny();
  c.name = "micro";
  c.vocab_size = 512;
  return c;
}

} // namespace deepinfer::engine::testing
