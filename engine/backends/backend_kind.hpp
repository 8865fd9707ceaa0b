#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace deepinfer::engine {

/// Where a rank's forward runs: the CPU kernels, or a CUDA device (issue 22).
enum class backend_kind : uint8_t { cpu, cuda };

/// "cpu" or "cuda".
inline const char* to_string(backend_kind b) {
  return b == backend_kind::cuda ? "cuda" : "cpu";
}

/// The backend named `name` ("cpu" or "cuda"); nullopt for anything else.
inline std::optional<backend_kind> parse_backend_kind(std::string_view name) {
  if (name == "cpu")
    return backend_kind::cpu;
  if (name == "cuda")
    return backend_kind::cuda;
  return std::nullopt;
}

} // namespace deepinfer::engine
