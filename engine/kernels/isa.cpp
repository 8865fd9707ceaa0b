#include "engine/kernels/isa.hpp"

#include <cpuid.h>

namespace deepinfer::engine::kernels {

namespace {

// AVX-VNNI (cpuid leaf 7, subleaf 1, eax bit 4): not every compiler's __builtin_cpu_supports
// knows it. Reported only (the AVX2 kernels do not use it).
bool has_avx_vnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 4)) != 0;
}

bool has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool has_avx512() {
  return has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

} // namespace

const char* to_string(cpu_isa isa) {
  switch (isa) {
  case cpu_isa::portable:
    return "portable";
  case cpu_isa::avx2:
    return "avx2";
  case cpu_isa::avx512:
    return "avx512";
  }
  return "?";
}

std::optional<cpu_isa> parse_cpu_isa(std::string_view s) {
  for (auto isa : {cpu_isa::portable, cpu_isa::avx2, cpu_isa::avx512})
    if (s == to_string(isa))
      return isa;
  return std::nullopt;
}

bool cpu_supports(cpu_isa isa) {
  switch (isa) {
  case cpu_isa::portable:
    return true;
  case cpu_isa::avx2:
    return has_avx2();
  case cpu_isa::avx512:
    return has_avx512();
  }
  return false;
}

cpu_isa best_cpu_isa() {
  return has_avx512() ? cpu_isa::avx512 : has_avx2() ? cpu_isa::avx2 : cpu_isa::portable;
}

std::vector<cpu_isa> supported_cpu_isas() {
  std::vector<cpu_isa> out;
  for (auto isa : {cpu_isa::portable, cpu_isa::avx2, cpu_isa::avx512})
    if (cpu_supports(isa))
      out.push_back(isa);
  return out;
}

std::string cpu_feature_summary() {
  std::string out;
  auto add = [&](bool has, const char* name) {
    if (has)
      out += out.empty() ? name : std::string{" "} + name;
  };
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(has_avx_vnni(), "avxvnni");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bw"), "avx512bw");
  add(__builtin_cpu_supports("avx512vl"), "avx512vl");
  add(__builtin_cpu_supports("avx512dq"), "avx512dq");
  add(__builtin_cpu_supports("avx512vnni"), "avx512vnni");
  return out.empty() ? "none" : out;
}

isa_choice choose_cpu_isa(std::string_view s) {
  if (s == "auto")
    return {best_cpu_isa(), {}};
  auto isa = parse_cpu_isa(s);
  if (!isa)
    return {std::nullopt, "unknown CPU ISA '" + std::string{s} +
                              "' (expected one of auto, portable, avx2, avx512)"};
  if (!cpu_supports(*isa))
    return {std::nullopt,
            "this CPU cannot run the " + std::string{to_string(*isa)} + " kernels (" +
                (*isa == cpu_isa::avx2 ? "they need avx2 and fma"
                                       : "they need avx2, fma, avx512f, avx512bw, avx512vl and avx512dq") +
                "; it has: " + cpu_feature_summary() + "); use --cpu-isa auto or " +
                to_string(best_cpu_isa())};
  return {isa, {}};
}

} // namespace deepinfer::engine::kernels
