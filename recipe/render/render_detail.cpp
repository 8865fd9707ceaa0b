#include "recipe/render/render_detail.hpp"

#include "recipe/json_parse.hpp"
#include "recipe/json_text.hpp"

namespace deepinfer::recipe::render_detail {

namespace {

constexpr std::string_view dsv32_tools_head =
    "## Tools\n\n"
    "You have access to a set of tools you can use to answer the user's question.\n"
    "You can invoke functions by writing a \"<｜DSML｜function_calls>\" block like the following as part of your "
    "reply to the user:\n"
    "<｜DSML｜function_calls>\n"
    "<｜DSML｜invoke name=\"$FUNCTION_NAME\">\n"
    "<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "<｜DSML｜invoke name=\"$FUNCTION_NAME2\">\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "</｜DSML｜function_calls>\n\n"
    "String and scalar parameters should be specified as is without any escaping or quotes, while lists and "
    "objects should use JSON format. The \"string\" attribute should be set to \"true\" for string type parameters "
    "and \"false\" for other types (numbers, booleans, arrays, objects).\n\n"
    "If the thinking_mode is enabled, then after function results you should strongly consider outputting a "
    "thinking block. Here is an example:\n\n"
    "<｜DSML｜function_calls>\n"
    "...\n"
    "</｜DSML｜function_calls>\n\n"
    "<function_results>\n"
    "...\n"
    "</function_results>\n\n"
    "<think>...thinking about results</think>\n\n"
    "Here are the functions available in JSONSchema format:\n"
    "<functions>\n";
constexpr std::string_view dsv32_tools_tail = "\n</functions>\n";

constexpr std::string_view dsv41_tools_head =
    "## Tools\n\n"
    "You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "
    "\"<｜DSML｜ calls>\" block like the following:\n\n"
    "<｜DSML｜ calls>\n"
    "<｜DSML｜ invoke name=\"$TOOL_NAME\">\n"
    "<｜DSML｜ parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜ parameter>\n"
    "...\n"
    "</｜DSML｜ invoke>\n"
    "<｜DSML｜ invoke name=\"$TOOL_NAME2\">\n"
    "...\n"
    "</｜DSML｜ invoke>\n"
    "</｜DSML｜ calls>\n\n"
    "String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, "
    "booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
    "<think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n";
constexpr std::string_view dsv41_tools_tail =
    "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n";

struct dsml_names {
  std::string_view block, invoke, parameter;
};

dsml_names names_of(template_version v) {
  if (v == template_version::dsv32)
    return {"function_calls", "invoke", "parameter"};
  return {" calls", " invoke", " parameter"};
}

// Tool-call arguments as an ordered object. V4.1 tolerates double-encoded JSON and wraps anything
// else as {"arguments": text}; an empty string means no arguments.
nlohmann::ordered_json arguments_object(const std::string& text) {
  if (text.empty())
    return nlohmann::ordered_json::object();
  // The request parser checked the text under the configured limits: the ceiling never refuses it.
  auto j = parse_json(text, json_limits::ceiling());
  if (j && j->is_string()) {
    auto inner = parse_json(j->get_ref<const std::string&>(), json_limits::ceiling());
    if (inner)
      j = std::move(inner);
  }
  if (!j || !j->is_object())
    return nlohmann::ordered_json{{"arguments", text}};
  return std::move(*j);
}

} // namespace

std::vector<flat_message> flatten(const conversation& conv) {
  std::vector<flat_message> out;
  out.reserve(conv.messages.size() + 1);
  for (const auto& m : conv.messages)
    out.push_back({m.role == role::developer ? role::system : m.role, &m, false, false});
  const bool tools = !conv.tools.empty() && conv.tool_choice.kind != tool_choice::mode::none;
  const bool format = conv.format.has_value();
  if (tools || format) {
    flat_message* sys = nullptr;
    for (auto& f : out)
      if (f.role == role::system) {
        sys = &f;
        break;
      }
    if (!sys) {
      out.insert(out.begin(), flat_message{role::system, nullptr, false, false});
      sys = &out.front();
    }
    sys->tools = tools;
    sys->format = format;
  }
  return out;
}

bool emit_content(segment_builder& b, const special_table& t, const message* m) {
  if (!m)
    return true;
  bool first = true;
  for (const auto& p : m->content) {
    if (!first)
      b.text("\n\n");
    first = false;
    if (p.type == content_part::kind::text) {
      b.text(p.value);
    } else {
      if (!t.id(spelling::image))
        return false;
      // One placeholder per position the image's embeddings fill (set once it is decoded).
      for (int64_t i = 0; i < p.image_tokens; ++i)
        b.special(spelling::image);
    }
  }
  return true;
}

bool emit_system(segment_builder& b, const special_table& t, template_version v, const conversation& conv,
                 const flat_message& f) {
  if (!emit_content(b, t, f.source))
    return false;
  if (f.tools) {
    b.text("\n\n");
    emit_tools(b, v, conv);
  }
  if (f.format) {
    b.text("\n\n");
    emit_format(b, conv);
  }
  return true;
}

bool emit_assistant(segment_builder& b, const special_table& t, const message& m, bool with_reasoning,
                    continuation open) {
  if (open == continuation::reasoning) {
    b.text(m.reasoning.value_or("")); // left open: the answer goes on reasoning
    return true;
  }
  if (with_reasoning) {
    b.text(m.reasoning.value_or(""));
    b.special(spelling::think_close);
  }
  if (!emit_content(b, t, &m))
    return false;
  if (!m.tool_calls.empty())
    emit_tool_calls(b, t.version(), m.tool_calls);
  if (open == continuation::none)
    b.special(spelling::eos);
  return true;
}

void emit_tools(segment_builder& b, template_version v, const conversation& conv) {
  b.templ(v == template_version::dsv32 ? dsv32_tools_head : dsv41_tools_head);
  std::string schemas;
  for (std::size_t i = 0; i < conv.tools.size(); ++i) {
    if (i > 0)
      schemas += '\n';
    append_python_json(schemas, conv.tools[i].function);
  }
  b.text(schemas);
  b.templ(v == template_version::dsv32 ? dsv32_tools_tail : dsv41_tools_tail);
}

void emit_format(segment_builder& b, const conversation& conv) {
  b.templ("## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n");
  b.text(python_json(conv.format->original));
}

void emit_tool_calls(segment_builder& b, template_version v, const std::vector<tool_call>& calls) {
  const auto n = names_of(v);
  const std::string dsml(spelling::dsml);
  b.templ("\n\n<" + dsml + std::string(n.block) + ">\n");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (i > 0)
      b.templ("\n");
    b.templ("<" + dsml + std::string(n.invoke) + " name=\"");
    b.text(calls[i].name);
    b.templ("\">\n");
    const auto args = arguments_object(calls[i].arguments);
    bool first = true;
    for (const auto& [key, value] : args.items()) {
      if (!first)
        b.templ("\n");
      first = false;
      b.templ("<" + dsml + std::string(n.parameter) + " name=\"");
      b.text(key);
      b.templ(value.is_string() ? "\" string=\"true\">" : "\" string=\"false\">");
      b.text(value.is_string() ? value.get_ref<const std::string&>() : python_json(value));
      b.templ("</" + dsml + std::string(n.parameter) + ">");
    }
    b.templ("\n</" + dsml + std::string(n.invoke) + ">");
  }
  b.templ("\n</" + dsml + std::string(n.block) + ">");
}

} // namespace deepinfer::recipe::render_detail
