#include "recipe/protocol/chat_request.hpp"

#include <charconv>

#include "recipe/protocol/chat_extras.hpp"
#include "recipe/protocol/json_reader.hpp"
#include "recipe/protocol/request_common.hpp"
#include "recipe/protocol/request_parsers.hpp"

namespace deepinfer::recipe {

namespace {

namespace jr = json_reader;
namespace rc = request_common;

std::vector<content_part> user_content(const json& v, const json_path& at) {
  return rc::content_parts(v, at, {"text", "image_url"}, [](const json& part, const json_path& p, const std::string& type) {
    if (type == "text")
      return content_part::text(jr::req_string(part, "text", p));
    const json* img = jr::find(part, "image_url");
    if (!img)
      (p / "image_url").fail("Missing required parameter: '" + (p / "image_url").str() + "'.");
    std::string url = img->is_string() ? img->get<std::string>() : jr::req_string(jr::object(*img, p / "image_url"), "url", p / "image_url");
    rc::check_image_url(url, p / "image_url" / "url");
    return content_part::image(std::move(url), (p / "image_url" / "url").str());
  });
}

message parse_message(const json& v, const json_path& at) {
  jr::object(v, at);
  message m;
  const auto r = jr::req_string(v, "role", at);
  jr::one_of(r, {"system", "developer", "user", "assistant", "tool"}, at / "role");
  const json* content = jr::find(v, "content");
  if (r == "system" || r == "developer") {
    m.role = r == "system" ? role::system : role::developer;
    if (!content)
      (at / "content").fail("Missing required parameter: '" + (at / "content").str() + "'.");
    m.content.push_back(content_part::text(rc::text_content(*content, at / "content", {"text"})));
  } else if (r == "user") {
    m.role = role::user;
    if (!content)
      (at / "content").fail("Missing required parameter: '" + (at / "content").str() + "'.");
    m.content = user_content(*content, at / "content");
  } else if (r == "tool") {
    m.role = role::tool;
    m.tool_call_id = jr::req_string(v, "tool_call_id", at);
    if (!content)
      (at / "content").fail("Missing required parameter: '" + (at / "content").str() + "'.");
    m.content.push_back(content_part::text(rc::text_content(*content, at / "content", {"text"})));
  } else {
    m.role = role::assistant;
    if (content)
      m.content.push_back(content_part::text(rc::text_content(*content, at / "content", {"text", "refusal"})));
    if (auto rs = jr::opt_string(v, "reasoning_content", at))
      m.reasoning = std::move(rs);
    else if (auto rs2 = jr::opt_string(v, "reasoning", at))
      m.reasoning = std::move(rs2);
    if (const json* calls = jr::find(v, "tool_calls")) {
      const auto cp = at / "tool_calls";
      jr::array(*calls, cp);
      for (std::size_t i = 0; i < calls->size(); ++i) {
        const auto p = cp / i;
        const json& c = jr::object((*calls)[i], p);
        tool_call tc;
        tc.id = jr::req_string(c, "id", p);
        jr::one_of(jr::opt_string(c, "type", p).value_or("function"), {"function"}, p / "type");
        const json* fn = jr::find(c, "function");
        if (!fn)
          (p / "function").fail("Missing required parameter: '" + (p / "function").str() + "'.");
        jr::object(*fn, p / "function");
        tc.name = jr::req_string(*fn, "name", p / "function");
        tc.arguments = jr::req_string(*fn, "arguments", p / "function");
        rc::check_arguments(tc.arguments, p / "function" / "arguments");
        m.tool_calls.push_back(std::move(tc));
      }
    }
    if (!content && m.tool_calls.empty() && !m.reasoning)
      (at / "content").fail("Missing required parameter: '" + (at / "content").str() +
                            "'. An assistant message needs content or tool_calls.");
  }
  return m;
}

void parse_tools(const json& v, const json_path& at, conversation& c) {
  rc::function_tools(v, at, c, [](const json& t, const json_path& p) {
    const json* fn = jr::find(t, "function");
    if (!fn)
      (p / "function").fail("Missing required parameter: '" + (p / "function").str() + "'.");
    jr::object(*fn, p / "function");
    return rc::function_definition(*fn, p / "function");
  });
}

void parse_tool_choice(const json& v, const json_path& at, conversation& c) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    jr::one_of(s, {"none", "auto", "required"}, at);
    c.tool_choice.kind = s == "none" ? tool_choice::mode::none
                         : s == "auto" ? tool_choice::mode::automatic
                                       : tool_choice::mode::required;
    return;
  }
  jr::object(v, at);
  jr::one_of(jr::req_string(v, "type", at), {"function"}, at / "type");
  const json* fn = jr::find(v, "function");
  if (!fn)
    (at / "function").fail("Missing required parameter: '" + (at / "function").str() + "'.");
  c.tool_choice.kind = tool_choice::mode::named;
  c.tool_choice.name = jr::req_string(jr::object(*fn, at / "function"), "name", at / "function");
}

} // namespace

conversation parse_chat_body(const json& j, const json_path& root) {
  conversation c;
  c.api = api_kind::chat;
  c.model = jr::req_string(j, "model", root);
  const json* msgs = jr::find(j, "messages");
  if (!msgs)
    (root / "messages").fail("Missing required parameter: 'messages'.");
  jr::array(*msgs, root / "messages");
  if (msgs->empty())
    (root / "messages").fail("Invalid 'messages': empty array. Expected an array with minimum length 1.");
  for (std::size_t i = 0; i < msgs->size(); ++i)
    c.messages.push_back(parse_message((*msgs)[i], root / "messages" / i));
  if (const json* t = jr::find(j, "tools"))
    parse_tools(*t, root / "tools", c);
  if (const json* tc = jr::find(j, "tool_choice"))
    parse_tool_choice(*tc, root / "tool_choice", c);
  c.parallel_tool_calls = jr::opt_bool(j, "parallel_tool_calls", root).value_or(true);
  // Thinking: `reasoning_effort` other than "none", or DeepSeek's `thinking: {"type": "enabled"}`.
  if (auto e = jr::opt_string(j, "reasoning_effort", root)) {
    jr::one_of(*e, {"none", "minimal", "low", "medium", "high", "xhigh", "max"}, root / "reasoning_effort");
    c.thinking = *e != "none";
    c.reasoning_effort = *e;
  }
  if (const json* th = jr::find(j, "thinking")) {
    jr::object(*th, root / "thinking");
    const auto type = jr::req_string(*th, "type", root / "thinking");
    jr::one_of(type, {"enabled", "disabled"}, root / "thinking" / "type");
    c.thinking = c.thinking || type == "enabled";
  }
  parse_chat_extras(j, root, c);
  auto& s = c.sampling;
  rc::parse_openai_sampling(j, root, s);
  s.logprobs = jr::opt_bool(j, "logprobs", root).value_or(false);
  s.top_logprobs = jr::opt_int(j, "top_logprobs", root, 0, 20).value_or(0);
  if (s.top_logprobs > 0 && !s.logprobs)
    (root / "top_logprobs").fail("Invalid value: 'top_logprobs' requires 'logprobs' to be true.");
  s.max_tokens = jr::opt_int(j, "max_completion_tokens", root, 1, INT32_MAX);
  if (!s.max_tokens)
    s.max_tokens = jr::opt_int(j, "max_tokens", root, 1, INT32_MAX);
  if (const json* st = jr::find(j, "stop"))
    s.stop = jr::stop_list(*st, root / "stop", 16);
  if (const json* rf = jr::find(j, "response_format"))
    c.format = request_common::parse_format(*rf, root / "response_format", true);
  rc::parse_openai_stream(j, root, c);
  rc::finish(c, j, root);
  return c;
}

} // namespace deepinfer::recipe
