#pragma once

// Shared by the recipe fuzz targets: special tables with the spec's ids (no tokenizer file needed)
// and an invariant check that aborts so libFuzzer reports it.

#include "recipe/render/special_table.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace deepinfer::recipe::fuzz {

inline const special_table& table(template_version v) {
  static const std::map<std::string, token_id, std::less<>> v32 = {
      {"<｜begin▁of▁sentence｜>", 0}, {"<｜end▁of▁sentence｜>", 1}, {"<｜User｜>", 128803},
      {"<｜Assistant｜>", 128804}, {"<think>", 128798}, {"</think>", 128799}};
  static const std::map<std::string, token_id, std::less<>> v41 = {
      {"<｜begin▁of▁sentence｜>", 0}, {"<｜end▁of▁sentence｜>", 1}, {"<｜User｜>", 128803},
      {"<｜Assistant｜>", 128804}, {"<think>", 128821}, {"</think>", 128822}, {"<｜System｜>", 128799},
      {"｜DSML｜", 128825}};
  auto make = [](template_version ver, const auto& ids) {
    return *special_table::build(ver, [&](std::string_view s) -> std::optional<token_id> {
      auto it = ids.find(s);
      if (it == ids.end())
        return std::nullopt;
      return it->second;
    });
  };
  static const special_table t32 = make(template_version::dsv32, v32);
  static const special_table t41 = make(template_version::dsv41, v41);
  return v == template_version::dsv32 ? t32 : t41;
}

inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

/// Whether `s` is valid UTF-8.
inline bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size())
      return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
        return false;
    i += n;
  }
  return true;
}

} // namespace deepinfer::recipe::fuzz
