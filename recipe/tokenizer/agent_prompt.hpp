#pragma once

// Test and bench only (no .cpp): an agent-style V4.1 prompt as the renderer would produce it
// (system + tool schemas + 40 turns with tool calls and tool results), for the parallel-encoding
// bench and tests. Tool results are real source files of the machine.

#include "recipe/tokenizer/test_corpus.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <string>

namespace deepinfer::recipe::test {

/// About `target_tokens` tokens of prompt for the V4.1 tokenizer `tok`.
inline prompt_segments agent_prompt(const tokenizer& tok, std::size_t target_tokens) {
  namespace cd = corpus_detail;
  auto sp = [&](const char* s) { return prompt_segment::special(tok.special_id(s).value_or(0), s); };
  const std::string sources = cd::gather(cd::files("/usr/include/c++/12/bits", {".h"}, false), 1 << 20, 40000) +
                              cd::gather(cd::files("/usr/lib/python3.11", {".py"}, false), 1 << 20, 40000);
  std::string tools = "## Tools\n\nYou have access to a set of tools to help answer the user's question.\n\n### Available Tool Schemas\n\n";
  for (const char* name : {"read_file", "write_file", "run_shell", "search_code", "list_dir", "git_diff", "apply_patch", "web_fetch"})
    tools += std::string{"{\"name\": \""} + name +
             "\", \"description\": \"Tool " + name + " of the coding agent; see the parameters.\", \"parameters\": {\"type\": "
             "\"object\", \"properties\": {\"path\": {\"type\": \"string\", \"description\": \"File or directory path\"}, "
             "\"max_lines\": {\"type\": \"integer\", \"minimum\": 1}, \"pattern\": {\"type\": \"string\"}}, \"required\": [\"path\"]}}\n";
  auto build = [&](std::size_t result_bytes) {
    prompt_segments p{sp("<｜begin▁of▁sentence｜>"), sp("<｜System｜>")};
    p.push_back(prompt_segment::plain("Reasoning Effort: 50 (range 1-100, the higher the value, the more thorough the reasoning)\n\n"
                                      "You are a careful software engineer working in a large C++ repository.\n\n" + tools));
    rng r{7};
    std::size_t pos = 0;
    for (int turn = 0; turn < 40; ++turn) {
      p.push_back(sp("<｜User｜>"));
      if (turn == 0) {
        p.push_back(prompt_segment::plain("Please find why the allocator test fails and fix it. Keep the style of the code base."));
      } else {
        std::string result = sources.substr(pos % (sources.size() - result_bytes), result_bytes);
        pos += result_bytes + r.between(0, 9999);
        p.push_back(prompt_segment::plain("<tool_result>" + result + "</tool_result>"));
      }
      p.push_back(sp("<｜Assistant｜>"));
      p.push_back(sp("<think>"));
      p.push_back(prompt_segment::plain("The output shows the definition; next I should check how it is used in turn " +
                                        std::to_string(turn) + ", then compare with the header."));
      p.push_back(sp("</think>"));
      p.push_back(prompt_segment::plain("Let me look at the next file.\n\n"));
      p.push_back(sp("｜DSML｜"));
      p.push_back(prompt_segment::plain(" calls>\n<"));
      p.push_back(sp("｜DSML｜"));
      p.push_back(prompt_segment::plain(" invoke name=\"read_file\">\n<"));
      p.push_back(sp("｜DSML｜"));
      p.push_back(prompt_segment::plain(" parameter name=\"path\" string=\"true\">src/file_" + std::to_string(turn) + ".cpp</"));
      p.push_back(sp("｜DSML｜"));
      p.push_back(prompt_segment::plain(" parameter>\n</"));
      p.push_back(sp("｜DSML｜"));
      p.push_back(prompt_segment::plain(" invoke>\n</"));
      p.push_back(sp("｜DSML｜"));
      p.push_back(prompt_segment::plain(" calls>"));
      p.push_back(sp("<｜end▁of▁sentence｜>"));
    }
    p.push_back(sp("<｜User｜>"));
    p.push_back(prompt_segment::plain("<tool_result>OK</tool_result>"));
    p.push_back(sp("<｜Assistant｜>"));
    p.push_back(sp("<think>"));
    return p;
  };
  // Size the tool results so that the whole prompt lands near the target.
  std::size_t bytes = 6000;
  for (int k = 0; k < 3; ++k) {
    const std::size_t n = tok.encode(build(bytes)).size();
    bytes = std::max<std::size_t>(100, bytes * target_tokens / std::max<std::size_t>(n, 1));
  }
  return build(bytes);
}

} // namespace deepinfer::recipe::test
