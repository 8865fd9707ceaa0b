#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace deepinfer::recipe {

/// The DeepSeek prompt format to render (spec/deepseek-format.md): `dsv41` (default; §7) or
/// `dsv32` (§2–§4, verified against DeepSeek's fixture).
enum class template_version : std::uint8_t { dsv41, dsv32 };

/// `"dsv41"` / `"dsv32"`; nullopt for anything else.
constexpr std::optional<template_version> parse_template_version(std::string_view s) {
  if (s == "dsv41")
    return template_version::dsv41;
  if (s == "dsv32")
    return template_version::dsv32;
  return std::nullopt;
}

/// The flag spelling of a version.
constexpr std::string_view to_string(template_version v) { return v == template_version::dsv41 ? "dsv41" : "dsv32"; }

} // namespace deepinfer::recipe
