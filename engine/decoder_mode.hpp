#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace deepinfer::engine {

/// How the decoder layers run at the end of a prefill (DESIGN.md §5.2).
enum class decoder_mode : uint8_t {
  /// Over the last 128 prompt tokens only (approximate decoder windows).
  bounded,
  /// Over the last ring + 128 x D tokens: the decoder windows come out exactly as a full run's,
  /// and snapshots carry them, so a prefix hit with a snapshot changes no bit.
  exact,
  /// Over every prompt token (reference for tests; cost grows with the prompt).
  full,
};

/// `bounded`, `exact` or `full`; nullopt for anything else.
inline std::optional<decoder_mode> parse_decoder_mode(std::string_view s) {
  if (s == "bounded")
    return decoder_mode::bounded;
  if (s == "exact")
    return decoder_mode::exact;
  if (s == "full")
    return decoder_mode::full;
  return std::nullopt;
}

} // namespace deepinfer::engine
