#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::engine::kernels {

/// The instruction sets the CPU kernels are written for. Every one computes the same bits (the
/// orders of canonical.hpp); they differ only in speed, so a mixed cluster reroutes and hits
/// caches without changing a token.
enum class cpu_isa : uint8_t {
  /// Plain C++ with `std::fma`: runs anywhere, the reference the others are tested against.
  portable,
  /// AVX2 + FMA (Intel Haswell and later, AMD Zen 1-5).
  avx2,
  /// AVX-512 F, BW, VL and DQ (Intel Skylake-SP and later, AMD Zen 4 and later); the 8-bit
  /// indexer uses VNNI where the CPU has it and AVX2's exact integer path otherwise.
  avx512,
};

/// "portable", "avx2" or "avx512".
const char* to_string(cpu_isa isa);

/// The ISA named `s` ("portable", "avx2", "avx512"); nullopt for anything else.
std::optional<cpu_isa> parse_cpu_isa(std::string_view s);

/// True when this CPU (cpuid) runs `isa`'s kernels.
bool cpu_supports(cpu_isa isa);

/// The fastest ISA this CPU runs.
cpu_isa best_cpu_isa();

/// Every ISA this CPU runs, portable first.
std::vector<cpu_isa> supported_cpu_isas();

/// The features the kernels look at that this CPU has, e.g. "avx2 fma avx512f avx512bw
/// avx512vl avx512dq avx512vnni" (for logs and benchmark records).
std::string cpu_feature_summary();

/// Result of `choose_cpu_isa`: the ISA, or why it cannot be used.
struct isa_choice {
  std::optional<cpu_isa> isa;
  std::string error;
};

/// The ISA for a `--cpu-isa` value: "auto" is the best this CPU runs; an ISA this CPU lacks or an
/// unknown name is an error that names what is missing and the valid choices.
isa_choice choose_cpu_isa(std::string_view s);

} // namespace deepinfer::engine::kernels
