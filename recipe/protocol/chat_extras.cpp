#include "recipe/protocol/chat_extras.hpp"

#include "recipe/protocol/request_common.hpp"

namespace deepinfer::recipe {

namespace {

namespace jr = json_reader;
namespace rc = request_common;

void parse_functions(const json& v, const json_path& at, conversation& c) {
  jr::array(v, at);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto p = at / i;
    const json& fn = jr::object(v[i], p);
    tool_definition d;
    d.name = jr::req_string(fn, "name", p);
    rc::check_function_name(d.name, p / "name");
    jr::opt_string(fn, "description", p);
    rc::check_parameters_schema(fn, "parameters", p);
    d.function = fn;
    c.tools.push_back(std::move(d));
  }
}

void parse_function_call(const json& v, const json_path& at, conversation& c) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    jr::one_of(s, {"none", "auto"}, at);
    c.tool_choice.kind = s == "none" ? tool_choice::mode::none : tool_choice::mode::automatic;
    return;
  }
  c.tool_choice.kind = tool_choice::mode::named;
  c.tool_choice.name = jr::req_string(jr::object(v, at), "name", at);
}

} // namespace

void parse_chat_extras(const json& j, const json_path& root, conversation& c) {
  // 1. OpenAI's deprecated function calling, the same thing under older names.
  if (const json* fns = jr::find(j, "functions")) {
    if (jr::find(j, "tools"))
      (root / "functions").fail("Invalid value: give either 'tools' or the deprecated 'functions', not both.");
    parse_functions(*fns, root / "functions", c);
  }
  if (const json* fc = jr::find(j, "function_call")) {
    if (jr::find(j, "tool_choice"))
      (root / "function_call")
          .fail("Invalid value: give either 'tool_choice' or the deprecated 'function_call', not both.");
    parse_function_call(*fc, root / "function_call", c);
  }
  // 2. vLLM passes these to the chat template; DeepSeek's reads `thinking` (Qwen's
  // `enable_thinking`, which clients send to any model).
  if (const json* kw = jr::find(j, "chat_template_kwargs")) {
    const auto at = root / "chat_template_kwargs";
    jr::object(*kw, at);
    const auto thinking = jr::opt_bool(*kw, "thinking", at);
    const auto enable_thinking = jr::opt_bool(*kw, "enable_thinking", at);
    if (thinking && enable_thinking && *thinking != *enable_thinking)
      (at / "enable_thinking").fail("Invalid value: 'thinking' and 'enable_thinking' disagree; send one.");
    if (auto on = thinking ? thinking : enable_thinking)
      c.thinking = *on;
  }
  // 3. vLLM's continue_final_message: the answer goes on with the final assistant message (a
  // prefill). vLLM also wants add_generation_prompt false; left out, it is taken as false here.
  if (jr::opt_bool(j, "continue_final_message", root).value_or(false)) {
    if (jr::opt_bool(j, "add_generation_prompt", root).value_or(false))
      (root / "add_generation_prompt")
          .fail("Invalid value: 'continue_final_message' and 'add_generation_prompt' cannot both be true.");
    if (c.messages.empty() || c.messages.back().role != role::assistant)
      (root / "continue_final_message")
          .fail("Invalid value: 'continue_final_message' continues the final message, which must be the assistant's.");
    c.continue_final = true;
  }
  // vLLM's echo: the final assistant message's text leads the answer (api_output).
  c.echo_final = jr::opt_bool(j, "echo", root).value_or(false);
  // 4. Predicted Outputs: the expected answer, verified as drafts (rank_engine::verify_step).
  if (const json* pr = jr::find(j, "prediction")) {
    const auto at = root / "prediction";
    jr::object(*pr, at);
    jr::one_of(jr::req_string(*pr, "type", at), {"content"}, at / "type");
    const json* content = jr::find(*pr, "content");
    if (!content)
      (at / "content").fail("Missing required parameter: 'prediction.content'.");
    c.sampling.prediction = rc::text_content(*content, at / "content", {"text"});
  }
  // 5. Audio output: the model only writes text; answering in text would silently drop the ask.
  if (const json* m = jr::find(j, "modalities")) {
    const auto at = root / "modalities";
    const auto& list = jr::array(*m, at);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto kind = jr::string(list[i], at / i);
      jr::one_of(kind, {"text", "audio"}, at / i);
      if (kind == "audio")
        (at / i).fail("Invalid value: audio output is not supported by this server; send modalities [\"text\"].");
    }
  }
  if (jr::find(j, "audio"))
    (root / "audio").fail("Invalid value: audio output is not supported by this server; drop 'audio'.");
  // 6. Web search (OpenAI's search models): this server searches nothing, and answering without
  // the search the client asked for would look like an answer grounded in it.
  if (const json* w = jr::find(j, "web_search_options"); w && !w->is_null())
    (root / "web_search_options").fail("Invalid value: this server has no web search; drop 'web_search_options' "
                                       "(or search yourself and send the results in a message).");
}

} // namespace deepinfer::recipe
