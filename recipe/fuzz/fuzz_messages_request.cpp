// libFuzzer target: arbitrary bodies through the messages request parser, then the renderer of both
// template versions. Invariants: no crash or sanitizer report; a refusal is a 400 whose body is
// JSON; an accepted request renders (or is refused with a 400) under both templates.

#include "recipe/fuzz/fuzz_support.hpp"
#include "recipe/protocol/parse_request.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/render/segment_builder.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string_view>

using namespace deepinfer::recipe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto conv = parse_request(*parse_api_kind("messages"), body);
  if (!conv) {
    fuzz::require(conv.error().status == 400, "refusals are 400");
    fuzz::require(nlohmann::json::accept(conv.error().body()), "error body is JSON");
    return 0;
  }
  for (auto v : {template_version::dsv41, template_version::dsv32}) {
    auto segs = render(*conv, fuzz::table(v));
    if (!segs) {
      fuzz::require(segs.error().status == 400 && nlohmann::json::accept(segs.error().body()), "render refusal");
      continue;
    }
    fuzz::require(!segs->empty() && segs->front().is_special(), "prompt starts with BOS");
    (void)to_text(*segs);
  }
  return 0;
}
