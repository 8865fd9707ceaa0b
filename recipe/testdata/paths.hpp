#pragma once

// Paths the recipe tests read: repository test data and the tokenizer cache made by
// scripts/bootstrap.sh.

#include "recipe/base/checkout_paths.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace deepinfer::recipe::test {

inline std::string source_dir() {
  if (const char* s = std::getenv("DEEPINFER_SOURCE_DIR"))
    return s;
  return checkout::source_dir();
}

inline std::string cache_dir() {
  if (const char* c = std::getenv("DEEPINFER_CACHE"))
    return c;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/deepinfer";
}

inline std::string tokenizer_path(const std::string& version) {
  return cache_dir() + "/tokenizer/tokenizer_" + (version == "dsv32" ? "v32" : "v41") + ".json";
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace deepinfer::recipe::test
