#pragma once

#include "kv/block_store.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>

namespace deepinfer::kv::testing {

/// A fresh directory under the build tree (or /tmp), removed with everything in it at scope exit.
struct temp_dir {
  std::filesystem::path path;

  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kv_test_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

/// A store config for tests: root `dir`, fingerprint of `model`, no fsync, clock `time`.
inline block_store::config store_config(const temp_dir& dir, std::string_view model,
                                        std::shared_ptr<const clock> time = system_clock()) {
  block_store::config cfg;
  cfg.root = dir.path;
  cfg.fingerprint = model_fingerprint::of(model);
  cfg.fsync = fsync_policy::none;
  cfg.time = std::move(time);
  return cfg;
}

} // namespace deepinfer::kv::testing
