#pragma once

// Test-only helpers (no .cpp: never part of the library): where the tokenizer assets and the
// HuggingFace reference live, and one shared instance of each tokenizer per test process.

#include "recipe/base/checkout_paths.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace deepinfer::recipe::test {

/// `${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}` as scripts/prepare_tokenizer.sh fills it.
inline std::filesystem::path cache_dir() {
  if (const char* c = std::getenv("DEEPINFER_CACHE"); c != nullptr && *c != '\0')
    return c;
  const char* home = std::getenv("HOME");
  return std::filesystem::path{home != nullptr ? home : "/root"} / ".cache" / "deepinfer";
}

/// The repository root.
inline std::filesystem::path source_dir() {
  if (const char* s = std::getenv("DEEPINFER_SOURCE_DIR"); s != nullptr && *s != '\0')
    return s;
  return checkout::source_dir();
}

/// `<cache>/tokenizer/<name>`, which must exist (run scripts/bootstrap.sh first).
inline std::filesystem::path asset(const std::string& name) {
  auto p = cache_dir() / "tokenizer" / name;
  if (!std::filesystem::exists(p))
    throw std::runtime_error(p.string() + " missing: run scripts/prepare_tokenizer.sh");
  return p;
}

/// The tokenizer loaded from `<cache>/tokenizer/<name>`, shared by all tests of the process.
inline std::shared_ptr<const tokenizer> shared(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const tokenizer>> loaded;
  std::lock_guard lock{mutex};
  auto& slot = loaded[name];
  if (!slot) {
    auto r = tokenizer::load(asset(name));
    if (!r)
      throw std::runtime_error(r.error);
    slot = r.value;
  }
  return slot;
}

/// A fresh tokenizer from `<cache>/tokenizer/<name>` that always takes the parallel path (two
/// threads, no size floor, not adaptive), for tests that hold it against the single-thread one.
inline std::shared_ptr<const tokenizer> always_parallel(const std::string& name) {
  tokenizer::config cfg;
  cfg.threads = 2;
  cfg.parallel_min_bytes = 1;
  cfg.adaptive = false;
  auto r = tokenizer::load(asset(name), cfg);
  if (!r)
    throw std::runtime_error(r.error);
  return r.value;
}

} // namespace deepinfer::recipe::test
