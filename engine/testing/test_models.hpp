#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

#include <fmt/format.h>

#include "engine/model/model_config.hpp"
#include "engine/model/random_model.hpp"
#include "recipe/base/checkout_paths.hpp"

namespace deepinfer::engine::testing {

/// This process's scratch root under the build tree (or /tmp); removed when the process exits.
inline const std::string& scratch_root() {
  struct root {
    std::string path;
    ~root() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const root r{fmt::format("{}/engine_test_data/{}", checkout::binary_dir(), ::getpid())};
  return r.path;
}

/// A fresh scratch directory named `name` under this process's scratch root.
inline std::string scratch_dir(const std::string& name) {
  auto dir = scratch_root() + "/" + name;
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
