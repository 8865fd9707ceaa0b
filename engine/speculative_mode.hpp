#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace deepinfer::engine {

/// How a decode rank speculates (DESIGN.md §5.3): off; fixed (every request verifies all the
/// draft head's tokens); variable (the step picks each request's prefix by expected acceptance
/// against the measured verify cost). Greedy output is the same token for token in every mode.
enum class speculative_mode : uint8_t { off, fixed, variable };

inline const char* to_string(speculative_mode m) {
  return m == speculative_mode::off ? "off" : m == speculative_mode::fixed ? "fixed" : "variable";
}

/// "off" | "fixed" | "variable"; nullopt otherwise.
inline std::optional<speculative_mode> parse_speculative_mode(std::string_view s) {
  if (s == "off")
    return speculative_mode::off;
  if (s == "fixed")
    return speculative_mode::fixed;
  if (s == "variable")
    return speculative_mode::variable;
  return std::nullopt;
}

} // namespace deepinfer::engine
