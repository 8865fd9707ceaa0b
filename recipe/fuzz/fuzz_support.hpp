#pragma once

// Shared by the recipe fuzz targets: special tables with the spec's ids (no tokenizer file needed)
// and an invariant check that aborts so libFuzzer reports it.

#include "recipe/protocol/parse_request.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/render/segment_builder.hpp"
#include "recipe/render/special_table.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
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

/// One request-parser fuzz input: arbitrary body through the parser of `api`, then the renderer of
/// both versions. Invariants: a refusal is a 400 whose body is JSON; an accepted request renders
/// (or is refused with a 400) under both templates, starting with BOS.
inline int request_input(api_kind api, const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto conv = parse_request(api, body);
  if (!conv) {
    require(conv.error().status == 400, "refusals are 400");
    require(nlohmann::json::accept(conv.error().body()), "error body is JSON");
    return 0;
  }
  for (auto v : {template_version::dsv41, template_version::dsv32}) {
    auto segs = render(*conv, table(v));
    if (!segs) {
      require(segs.error().status == 400 && nlohmann::json::accept(segs.error().body()), "render refusal");
      continue;
    }
    require(!segs->empty() && segs->front().is_special(), "prompt starts with BOS");
    (void)to_text(*segs);
  }
  return 0;
}

} // namespace deepinfer::recipe::fuzz
