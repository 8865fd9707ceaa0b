#include "recipe/protocol/messages_request.hpp"

#include "recipe/protocol/json_reader.hpp"
#include "recipe/protocol/request_common.hpp"
#include "recipe/protocol/request_parsers.hpp"

namespace deepinfer::recipe {

namespace {

namespace jr = json_reader;
namespace rc = request_common;

/// An image or document block's `source` object, its path and its `type`.
struct block_source {
  const json* src;
  json_path at;
  std::string type;
};

block_source source_of(const json& b, const json_path& at) {
  const json* src = jr::find(b, "source");
  if (!src)
    (at / "source").fail("Field required");
  auto p = at / "source";
  jr::object(*src, p);
  auto type = jr::req_string(*src, "type", p);
  return {src, std::move(p), std::move(type)};
}

content_part image_block(const json& b, const json_path& at) {
  const auto [src, p, type] = source_of(b, at);
  jr::one_of(type, {"base64", "url"}, p / "type");
  if (type == "url") {
    auto url = jr::req_string(*src, "url", p);
    rc::check_image_url(url, p / "url");
    return content_part::image(std::move(url), (p / "url").str());
  }
  const auto media = jr::req_string(*src, "media_type", p);
  jr::one_of(media, {"image/jpeg", "image/png", "image/gif", "image/webp"}, p / "media_type");
  return content_part::image("data:" + media + ";base64," + jr::req_string(*src, "data", p), (p / "data").str());
}

/// A text block's text; Anthropic refuses an empty one (it would add nothing but its framing).
std::string text_block(const json& b, const json_path& at) {
  auto text = jr::req_string(b, "text", at);
  if (text.empty())
    (at / "text").fail("text content blocks must be non-empty");
  return text;
}

/// A document block as the text the model reads: its title and context (when given), then its
/// text. Plain-text sources (`text`, or `content` with text blocks) only: this server reads no
/// PDF and fetches no URL, and answering without the document would look like an answer about it.
content_part document_block(const json& b, const json_path& at) {
  const auto [src, p, type] = source_of(b, at);
  if (type == "base64" || type == "url" || type == "file")
    (p / "type").fail("Invalid value: '" + shown_value(type) + "'. This server reads plain-text documents only (source type "
                      "'text' or 'content'); extract the text of the document and send it as a text source.");
  jr::one_of(type, {"text", "content"}, p / "type");
  std::string body;
  if (type == "text") {
    if (auto media = jr::opt_string(*src, "media_type", p))
      jr::one_of(*media, {"text/plain"}, p / "media_type");
    body = jr::req_string(*src, "data", p);
  } else {
    const json* content = jr::find(*src, "content");
    if (!content)
      (p / "content").fail("Field required");
    if (content->is_string()) {
      body = content->get<std::string>();
    } else {
      const auto& blocks = jr::array(*content, p / "content");
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        const auto q = p / "content" / i;
        const json& blk = jr::object(blocks[i], q);
        jr::one_of(jr::req_string(blk, "type", q), {"text"}, q / "type");
        body += (body.empty() ? "" : "\n\n") + jr::req_string(blk, "text", q);
      }
    }
  }
  std::string text;
  if (auto title = jr::opt_string(b, "title", at); title && !title->empty())
    text += *title + "\n\n";
  if (auto context = jr::opt_string(b, "context", at); context && !context->empty())
    text += *context + "\n\n";
  text += body;
  if (text.empty())
    (p / "data").fail("document content must be non-empty");
  return content_part::text(std::move(text));
}

std::vector<content_part> tool_result_content(const json& v, const json_path& at) {
  return rc::content_parts(v, at, {"text", "image", "document"}, [](const json& b, const json_path& p, const std::string& type) {
    return type == "text" ? content_part::text(jr::req_string(b, "text", p))
           : type == "image" ? image_block(b, p)
                             : document_block(b, p);
  });
}

void user_message(const json& content, const json_path& at, conversation& c) {
  if (content.is_string()) {
    c.messages.push_back({role::user, {content_part::text(content.get<std::string>())}, std::nullopt, {}, {}});
    return;
  }
  jr::array(content, at);
  message pending{role::user, {}, std::nullopt, {}, {}};
  auto flush = [&] {
    if (!pending.content.empty())
      c.messages.push_back(std::move(pending));
    pending = message{role::user, {}, std::nullopt, {}, {}};
  };
  for (std::size_t i = 0; i < content.size(); ++i) {
    const auto p = at / i;
    const json& b = jr::object(content[i], p);
    const auto type = jr::req_string(b, "type", p);
    jr::one_of(type, {"text", "image", "document", "tool_result"}, p / "type");
    if (type == "text") {
      pending.content.push_back(content_part::text(text_block(b, p)));
    } else if (type == "image") {
      pending.content.push_back(image_block(b, p));
    } else if (type == "document") {
      pending.content.push_back(document_block(b, p));
    } else {
      flush();
      message m;
      m.role = role::tool;
      m.tool_call_id = jr::req_string(b, "tool_use_id", p);
      if (const json* tc = jr::find(b, "content"))
        m.content = tool_result_content(*tc, p / "content");
      jr::opt_bool(b, "is_error", p);
      c.messages.push_back(std::move(m));
    }
  }
  flush();
}

void assistant_message(const json& content, const json_path& at, conversation& c) {
  message m;
  m.role = role::assistant;
  if (content.is_string()) {
    m.content.push_back(content_part::text(content.get<std::string>()));
    c.messages.push_back(std::move(m));
    return;
  }
  jr::array(content, at);
  for (std::size_t i = 0; i < content.size(); ++i) {
    const auto p = at / i;
    const json& b = jr::object(content[i], p);
    const auto type = jr::req_string(b, "type", p);
    jr::one_of(type, {"text", "thinking", "redacted_thinking", "tool_use"}, p / "type");
    if (type == "text") {
      m.content.push_back(content_part::text(text_block(b, p)));
    } else if (type == "thinking") {
      m.reasoning = m.reasoning.value_or("") + jr::req_string(b, "thinking", p);
    } else if (type == "tool_use") {
      tool_call tc;
      tc.id = jr::req_string(b, "id", p);
      tc.name = jr::req_string(b, "name", p);
      const json* input = jr::find(b, "input");
      if (!input)
        (p / "input").fail("Field required");
      tc.arguments = jr::object(*input, p / "input").dump();
      m.tool_calls.push_back(std::move(tc));
    } // redacted_thinking: opaque to us, nothing to render
  }
  // Several text blocks are one answer, not separate paragraphs.
  if (m.content.size() > 1) {
    std::string all;
    for (const auto& part : m.content)
      all += part.value;
    m.content = {content_part::text(std::move(all))};
  }
  c.messages.push_back(std::move(m));
}

void parse_tools(const json& v, const json_path& at, conversation& c) {
  jr::array(v, at);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto p = at / i;
    const json& t = jr::object(v[i], p);
    if (auto type = jr::opt_string(t, "type", p))
      jr::one_of(*type, {"custom"}, p / "type");
    tool_definition d;
    d.name = jr::req_string(t, "name", p);
    rc::check_function_name(d.name, p / "name");
    const json* schema = jr::find(t, "input_schema");
    if (!schema)
      (p / "input_schema").fail("Field required");
    rc::check_parameters_schema(t, "input_schema", p);
    // Rendered in the OpenAI function form so the model sees one schema layout for every API.
    d.function = json::object();
    d.function["name"] = d.name;
    if (auto desc = jr::opt_string(t, "description", p))
      d.function["description"] = *desc;
    d.function["parameters"] = *schema;
    c.tools.push_back(std::move(d));
  }
}

/// `output_config.format`: `{type: "json_schema", schema}`, enforced (and rendered into the
/// prompt) as Chat's `response_format` json_schema is.
response_format output_format(const json& v, const json_path& at) {
  jr::object(v, at);
  jr::one_of(jr::req_string(v, "type", at), {"json_schema"}, at / "type");
  const json* schema = jr::find(v, "schema");
  if (!schema)
    (at / "schema").fail("Field required");
  response_format f;
  f.kind = response_format::mode::json_schema;
  f.schema = jr::object(*schema, at / "schema");
  f.strict = true;
  f.original = v;
  return f;
}

} // namespace

conversation parse_messages_body(const json& j, const json_path& root) {
  conversation c;
  c.api = api_kind::messages;
  c.model = jr::req_string(j, "model", root);
  c.sampling.max_tokens = jr::opt_int(j, "max_tokens", root, 1, INT32_MAX);
  if (!c.sampling.max_tokens)
    (root / "max_tokens").fail("Field required");
  if (const json* sys = jr::find(j, "system")) {
    message m;
    m.role = role::system;
    m.content.push_back(content_part::text(rc::text_content(*sys, root / "system", {"text"})));
    c.instructions = m.content.front().value;
    c.messages.push_back(std::move(m));
  }
  const json* msgs = jr::find(j, "messages");
  if (!msgs)
    (root / "messages").fail("Field required");
  jr::array(*msgs, root / "messages");
  if (msgs->empty())
    (root / "messages").fail("List should have at least 1 item after validation, not 0");
  for (std::size_t i = 0; i < msgs->size(); ++i) {
    const auto p = root / "messages" / i;
    const json& m = jr::object((*msgs)[i], p);
    const auto r = jr::req_string(m, "role", p);
    jr::one_of(r, {"user", "assistant"}, p / "role");
    const json* content = jr::find(m, "content");
    if (!content)
      (p / "content").fail("Field required");
    // An empty turn would otherwise vanish from the prompt (a user turn with nothing in it renders
    // no tags at all); only a final assistant turn may be empty, as a prefill with nothing in it.
    const bool final_assistant = r == "assistant" && i + 1 == msgs->size();
    const bool empty = (content->is_string() && content->get_ref<const std::string&>().empty()) ||
                       (content->is_array() && content->empty());
    if (empty && !final_assistant)
      (p / "content").fail("all messages must have non-empty content except for the optional final assistant message");
    if (r == "user")
      user_message(*content, p / "content", c);
    else
      assistant_message(*content, p / "content", c);
  }
  // Anthropic's prefill: a final assistant message is where the answer picks up.
  c.continue_final = !c.messages.empty() && c.messages.back().role == role::assistant;
  if (const json* t = jr::find(j, "tools"))
    parse_tools(*t, root / "tools", c);
  if (const json* tc = jr::find(j, "tool_choice")) {
    const auto p = root / "tool_choice";
    jr::object(*tc, p);
    const auto type = jr::req_string(*tc, "type", p);
    jr::one_of(type, {"auto", "any", "tool", "none"}, p / "type");
    c.tool_choice.kind = type == "auto" ? tool_choice::mode::automatic
                         : type == "any" ? tool_choice::mode::required
                         : type == "none" ? tool_choice::mode::none
                                          : tool_choice::mode::named;
    if (type == "tool")
      c.tool_choice.name = jr::req_string(*tc, "name", p);
    c.parallel_tool_calls = !jr::opt_bool(*tc, "disable_parallel_tool_use", p).value_or(false);
  }
  if (const json* th = jr::find(j, "thinking")) {
    const auto p = root / "thinking";
    jr::object(*th, p);
    const auto type = jr::req_string(*th, "type", p);
    jr::one_of(type, {"enabled", "disabled", "adaptive"}, p / "type");
    if (auto display = jr::opt_string(*th, "display", p)) {
      jr::one_of(*display, {"summarized", "omitted"}, p / "display");
      if (*display == "omitted")
        (p / "display").fail("'omitted' is not supported: this server returns thinking as text; drop 'display' or "
                             "send 'summarized'.");
    }
    // Adaptive thinking lets the model decide how much to think: DeepSeek's template has no such
    // mode, so it is thinking on at the effort output_config.effort gives (default high), with no
    // budget.
    if (type == "adaptive")
      c.thinking = true;
    if (type == "enabled") {
      c.thinking = true;
      c.thinking_budget = jr::opt_int(*th, "budget_tokens", p, 1024, INT32_MAX);
      if (!c.thinking_budget)
        (p / "budget_tokens").fail("Field required");
      if (*c.thinking_budget >= *c.sampling.max_tokens)
        (root / "max_tokens").fail("`max_tokens` must be greater than `thinking.budget_tokens`.");
    }
  }
  if (const json* oc = jr::find(j, "output_config")) {
    const auto p = root / "output_config";
    jr::object(*oc, p);
    if (auto e = jr::opt_string(*oc, "effort", p)) {
      // The V4.1 template's effort levels: low 25, medium and high 50, xhigh 75, max 100.
      jr::one_of(*e, {"low", "medium", "high", "xhigh", "max"}, p / "effort");
      c.reasoning_effort = *e;
    }
    if (const json* f = jr::find(*oc, "format"))
      c.format = output_format(*f, p / "format");
  }
  // The beta API's older spelling of output_config.format, which the SDK's beta parser still sends.
  if (const json* f = jr::find(j, "output_format")) {
    if (c.format)
      (root / "output_format").fail("give either 'output_format' or 'output_config.format', not both.");
    c.format = output_format(*f, root / "output_format");
  }
  // Remote MCP servers would be tools the model calls through Anthropic's own connector: this
  // server has none, and dropping them silently would answer without the tools the client gave.
  if (const json* mcp = jr::find(j, "mcp_servers"); mcp && !mcp->is_null() && !(mcp->is_array() && mcp->empty()))
    (root / "mcp_servers").fail("MCP servers are not supported by this server; declare the tools in 'tools' and "
                                "run them on the client.");
  auto& s = c.sampling;
  s.temperature = jr::opt_number(j, "temperature", root, 0, 1);
  s.top_p = jr::opt_number(j, "top_p", root, 0, 1);
  s.top_k = jr::opt_int(j, "top_k", root, 0, 1 << 20);
  if (const json* st = jr::find(j, "stop_sequences")) {
    jr::array(*st, root / "stop_sequences");
    s.stop = jr::stop_list(*st, root / "stop_sequences", 16);
  }
  c.stream = jr::opt_bool(j, "stream", root).value_or(false);
  rc::finish(c, j, root);
  return c;
}

} // namespace deepinfer::recipe
