#pragma once

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

} // namespace deepinfer::kv::testing
