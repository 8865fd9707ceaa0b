#pragma once

// DEEPINFER_ASSERT for broken invariants (STYLE §6): header-only, usable by every library.

#include <cstdlib>
#include <string>

#include <spdlog/spdlog.h>

namespace deepinfer::detail {

/// Logs a broken invariant at critical level on the default logger (launcher/ gives it its sinks)
/// and aborts: corrupt state never goes on.
[[noreturn]] inline void assert_failed(const char* condition, const char* file, int line, const std::string& what) {
  spdlog::default_logger_raw()->critical("invariant broken at {}:{} ({}): {}", file, line, condition, what);
  spdlog::default_logger_raw()->flush();
  std::abort();
}

} // namespace deepinfer::detail

/// Checks an invariant: when `cond` is false, logs `fmt` (fmt-style, with its arguments) at
/// critical level with the file, line and condition, and aborts. For bugs only (a ref count
/// below zero, a block freed twice), never for bad input: that is a value (`deepinfer::expected`).
#define DEEPINFER_ASSERT(cond, ...)                                                                \
  do {                                                                                             \
    if (!(cond)) [[unlikely]]                                                                      \
      ::deepinfer::detail::assert_failed(#cond, __FILE__, __LINE__, fmt::format(__VA_ARGS__));     \
  } while (false)
