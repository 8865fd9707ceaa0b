#pragma once

// Sample assistant turns shared by the parser tests, the reassembly test and the benchmarks.

#include "recipe/protocol/conversation.hpp"

#include <string>

namespace deepinfer::recipe::test {

/// An assistant turn with reasoning, CJK/emoji content, and three tool calls (nested JSON, strings
/// with quotes/newlines/tabs, no arguments). With `dsml_spellings`, the content and one argument
/// also spell DSML tags in ordinary text (only meaningful for dsv41, where `｜DSML｜` is a token).
inline message sample_turn(bool dsml_spellings) {
  message m;
  m.role = role::assistant;
  m.reasoning = "Let me think… the user wants 天气 🌦 and wrote </think> literally.\nPlan: call two tools.";
  std::string content = "Sure — 中文回答 with emoji 😀🎉 and a tag spelled </think> in text.";
  if (dsml_spellings)
    content += " Also <｜DSML｜ invoke name=\"x\"> and </｜DSML｜ calls> typed as text.";
  m.content.push_back(content_part::text(content));
  m.tool_calls.push_back({"a", "get_weather",
                          R"({"city": "Zürich \"old town\"", "days": 3, "ratio": 0.25, "flags": [true, false, null],
                              "nested": {"a": [1, {"b": "x\ny\\z"}], "empty": {}}})"});
  std::string q = R"({"query": "多行\n文本 <b>bold</b> & \"quotes\"\ttab")";
  if (dsml_spellings)
    q += R"(, "note": "</｜DSML｜ parameter> inside a value")";
  q += "}";
  m.tool_calls.push_back({"b", "web.search", q});
  m.tool_calls.push_back({"c", "no_args", "{}"});
  return m;
}

} // namespace deepinfer::recipe::test
