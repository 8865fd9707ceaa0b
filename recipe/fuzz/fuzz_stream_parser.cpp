// libFuzzer target: arbitrary token sequences, cut into arbitrary chunks, through the stream
// parser of both template versions. Invariants: no crash or sanitizer report, emitted text is valid
// UTF-8, tool events are well ordered, and exactly one finish event ends every stream (with or
// without stop sequences).

#include "recipe/fuzz/fuzz_support.hpp"
#include "recipe/stream/stream_parser.hpp"
#include "recipe/testdata/byte_vocab.hpp"

#include <cstdint>
#include <string>
#include <vector>

using namespace deepinfer::recipe;

using test::byte_base;
using test::byte_token;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1)
    return 0;
  const auto v = (data[0] & 1) ? template_version::dsv32 : template_version::dsv41;
  const bool thinking = data[0] & 2;
  const auto& t = fuzz::table(v);
  // Token units of two bytes: (selector, value). Selector 0..15 picks a special token of the table
  // (0 = EOS is rare: only when value is 0); >= 16 a byte token; bit 7 of the selector cuts a chunk.
  std::vector<token_id> ids;
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i + 1 < size; i += 2) {
    const std::uint8_t sel = data[i] & 0x7F, val = data[i + 1];
    if (data[i] & 0x80)
      cuts.push_back(ids.size());
    if (sel < 16) {
      const auto& e = t.entries();
      const auto& pick = e[val % e.size()];
      if (pick.second == 1 && val != 0)
        continue;
      ids.push_back(pick.second);
    } else {
      ids.push_back(byte_base + val);
    }
  }
  stream_parser::config cfg{thinking, "call_", {}};
  if (data[0] & 4)
    cfg.stop = {"ab", "\n\n", "\xE4\xB8\xAD"}; // ASCII, newlines, and a CJK character
  stream_parser p(cfg, t, byte_token);
  std::size_t finishes = 0, at = 0;
  std::uint32_t started = 0, ended = 0;
  auto check = [&](std::span<const stream_event> evs) {
    for (const auto& e : evs) {
      fuzz::require(finishes == 0, "event after finish");
      switch (e.type) {
        case stream_event::kind::reasoning:
        case stream_event::kind::content:
          fuzz::require(!e.text.empty() && fuzz::valid_utf8(e.text), "text is valid, non-empty UTF-8");
          break;
        case stream_event::kind::tool_call_start:
          fuzz::require(e.tool_index == started && ended == started, "calls start in order");
          fuzz::require(fuzz::valid_utf8(e.tool_name), "tool name is UTF-8");
          ++started;
          break;
        case stream_event::kind::tool_call_arguments:
          fuzz::require(fuzz::valid_utf8(e.text), "arguments are UTF-8");
          break;
        case stream_event::kind::tool_call_end:
          fuzz::require(e.tool_index == ended && ended < started, "calls end in order");
          ++ended;
          break;
        case stream_event::kind::finish: ++finishes; break;
      }
    }
  };
  for (auto c : cuts) {
    check(p.feed(std::span(ids).subspan(at, c - at)));
    at = c;
  }
  check(p.feed(std::span(ids).subspan(at)));
  check(p.finish(finish_reason::length));
  fuzz::require(finishes == 1, "exactly one finish");
  return 0;
}
