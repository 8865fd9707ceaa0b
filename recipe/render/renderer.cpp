#include "recipe/render/renderer.hpp"

#include "recipe/render/render_detail.hpp"

#include <string>

namespace deepinfer::recipe {

namespace render_detail {
bool render_dsv32(segment_builder& b, const special_table& t, const conversation& conv,
                  const std::vector<flat_message>& msgs);
bool render_dsv41(segment_builder& b, const special_table& t, const conversation& conv,
                  const std::vector<flat_message>& msgs);
} // namespace render_detail

int reasoning_effort_level(std::string_view effort) {
  // vLLM's V4.1 table (low 25, high 50, xhigh 75, max 100, default high); OpenAI's minimal and
  // medium map to their neighbours.
  if (effort == "minimal" || effort == "low")
    return 25;
  if (effort == "xhigh")
    return 75;
  if (effort == "max")
    return 100;
  return 50;
}

prompt_segments render_completion(const message& m, const special_table& specials, bool thinking) {
  segment_builder b(specials);
  render_detail::emit_assistant(b, specials, m, thinking);
  return b.take();
}

expected<prompt_segments, api_error> render(const conversation& conv, const special_table& specials) {
  if (continuation_of(conv) != continuation::none && !conv.messages.back().tool_calls.empty()) {
    // Going on after a tool call would write past the call block, which ends the turn.
    api_error e;
    e.api = conv.api;
    e.status = 400;
    const auto last = std::to_string(conv.messages.size() - 1);
    const bool anthropic = conv.api == api_kind::messages;
    e.param = anthropic ? "messages." + last + ".content" : "messages[" + last + "].tool_calls";
    e.message = anthropic ? e.param + ": the final assistant message is continued (a prefill) and cannot end with "
                                      "tool_use blocks; send their tool_result in a user message instead."
                          : "continue_final_message: the final assistant message cannot hold tool_calls; send "
                            "their results as tool messages instead.";
    return e;
  }
  segment_builder b(specials);
  const auto msgs = render_detail::flatten(conv);
  const bool ok = specials.version() == template_version::dsv32
                      ? render_detail::render_dsv32(b, specials, conv, msgs)
                      : render_detail::render_dsv41(b, specials, conv, msgs);
  if (!ok) {
    api_error e;
    e.api = conv.api;
    e.status = 400;
    e.message = std::string("Image inputs are not supported by prompt template ") +
                std::string(to_string(specials.version())) + " with this tokenizer.";
    e.param = conv.api == api_kind::responses ? "input" : "messages";
    return e;
  }
  return b.take();
}

} // namespace deepinfer::recipe
