#include "recipe/protocol/responses_request.hpp"

#include "recipe/protocol/json_reader.hpp"
#include "recipe/protocol/request_common.hpp"
#include "recipe/protocol/request_parsers.hpp"

namespace deepinfer::recipe {

namespace {

namespace jr = json_reader;
namespace rc = request_common;

std::vector<content_part> parts(const json& v, const json_path& at, bool assistant) {
  const auto part = [](const json& obj, const json_path& p, const std::string& type) {
    if (type != "input_image")
      return content_part::text(jr::req_string(obj, type == "refusal" ? "refusal" : "text", p));
    auto url = jr::opt_string(obj, "image_url", p);
    if (!url)
      (p / "image_url").fail("Missing required parameter: '" + (p / "image_url").str() +
                             "'. Only images given by URL or data URI are supported.");
    rc::check_image_url(*url, p / "image_url");
    return content_part::image(std::move(*url), (p / "image_url").str());
  };
  if (assistant)
    return rc::content_parts(v, at, {"output_text", "refusal", "input_text"}, part);
  return rc::content_parts(v, at, {"input_text", "input_image", "output_text"}, part);
}

// Assistant turns are assembled from consecutive reasoning, message and function_call items.
struct assembler {
  conversation& c;
  bool open = false; // the last message is an assistant turn still taking items

  message& assistant() {
    if (!open) {
      message m;
      m.role = role::assistant;
      c.messages.push_back(std::move(m));
      open = true;
    }
    return c.messages.back();
  }
  void close() { open = false; }
};

void parse_item(const json& v, const json_path& at, assembler& a) {
  jr::object(v, at);
  const auto type = jr::opt_string(v, "type", at).value_or("message");
  jr::one_of(type, {"message", "function_call", "function_call_output", "reasoning"}, at / "type");
  auto& c = a.c;
  if (type == "message") {
    const auto r = jr::req_string(v, "role", at);
    jr::one_of(r, {"user", "assistant", "system", "developer"}, at / "role");
    const json* content = jr::find(v, "content");
    if (!content)
      (at / "content").fail("Missing required parameter: '" + (at / "content").str() + "'.");
    if (r == "assistant") {
      // A message after calls or text starts a new assistant turn.
      if (a.open && (!a.c.messages.back().content.empty() || !a.c.messages.back().tool_calls.empty()))
        a.close();
      auto& m = a.assistant();
      auto ps = parts(*content, at / "content", true);
      m.content.insert(m.content.end(), ps.begin(), ps.end());
      return;
    }
    a.close();
    message m;
    m.role = r == "user" ? role::user : r == "system" ? role::system : role::developer;
    m.content = parts(*content, at / "content", false);
    if (m.role != role::user)
      for (std::size_t i = 0; i < m.content.size(); ++i)
        if (m.content[i].type == content_part::kind::image)
          (at / "content" / i).fail("Invalid value: images are only allowed in user messages.");
    c.messages.push_back(std::move(m));
  } else if (type == "function_call") {
    tool_call tc;
    tc.id = jr::req_string(v, "call_id", at);
    tc.name = jr::req_string(v, "name", at);
    tc.arguments = jr::req_string(v, "arguments", at);
    rc::check_arguments(tc.arguments, at / "arguments");
    a.assistant().tool_calls.push_back(std::move(tc));
  } else if (type == "function_call_output") {
    a.close();
    message m;
    m.role = role::tool;
    m.tool_call_id = jr::req_string(v, "call_id", at);
    const json* out = jr::find(v, "output");
    if (!out)
      (at / "output").fail("Missing required parameter: '" + (at / "output").str() + "'.");
    m.content = parts(*out, at / "output", false);
    c.messages.push_back(std::move(m));
  } else {
    // Reasoning: the full text when given, else the summary; it belongs to the assistant turn
    // that follows it.
    std::string text;
    if (const json* rcont = jr::find(v, "content")) {
      jr::array(*rcont, at / "content");
      for (std::size_t i = 0; i < rcont->size(); ++i) {
        const auto p = at / "content" / i;
        jr::one_of(jr::req_string(jr::object((*rcont)[i], p), "type", p), {"reasoning_text"}, p / "type");
        text += jr::req_string((*rcont)[i], "text", p);
      }
    } else if (const json* sum = jr::find(v, "summary")) {
      jr::array(*sum, at / "summary");
      for (std::size_t i = 0; i < sum->size(); ++i) {
        const auto p = at / "summary" / i;
        if (i > 0)
          text += "\n\n";
        text += jr::req_string(jr::object((*sum)[i], p), "text", p);
      }
    }
    if (a.open && (!a.c.messages.back().content.empty() || !a.c.messages.back().tool_calls.empty() ||
                   a.c.messages.back().reasoning))
      a.close();
    auto& m = a.assistant();
    m.reasoning = std::move(text);
  }
}

void parse_tools(const json& v, const json_path& at, conversation& c) {
  rc::function_tools(v, at, c, [](const json& t, const json_path& p) {
    // The function object the templates render: the tool minus its `type`, key order kept.
    json fn = json::object();
    for (const auto& [k, x] : t.items())
      if (k != "type")
        fn[k] = x;
    return rc::function_definition(std::move(fn), p);
  });
}

} // namespace

conversation parse_responses_body(const json& j, const json_path& root) {
  conversation c;
  c.api = api_kind::responses;
  c.model = jr::req_string(j, "model", root);
  for (const char* stateful : {"conversation", "prompt"})
    if (const json* v = jr::find(j, stateful); v && !v->is_null())
      (root / stateful).fail(std::string("Unsupported parameter: '") + stateful +
                             "'. Continue a stored response with 'previous_response_id', or send the full input.");
  if (const json* prev = jr::find(j, "previous_response_id"); prev && !prev->is_null()) {
    c.previous_response_id = jr::string(*prev, root / "previous_response_id");
    if (c.previous_response_id.empty())
      (root / "previous_response_id").fail("Invalid 'previous_response_id': empty string.");
  }
  if (const json* st = jr::find(j, "store"); st && !st->is_null())
    c.store = jr::opt_bool(j, "store", root).value_or(true);
  if (const json* t = jr::find(j, "truncation"); t && !t->is_null()) {
    const auto mode = jr::string(*t, root / "truncation");
    jr::one_of(mode, {"auto", "disabled"}, root / "truncation");
    c.truncate_auto = mode == "auto";
  }
  if (const json* b = jr::find(j, "background"); b && !b->is_null())
    c.background = jr::opt_bool(j, "background", root).value_or(false);
  if (c.background && !c.store)
    (root / "background").fail("Invalid 'background': background mode needs 'store' true (the result is "
                                "fetched later with GET /v1/responses/{id}); drop 'store': false.");
  if (auto ins = jr::opt_string(j, "instructions", root)) {
    message m;
    m.role = role::system;
    m.content.push_back(content_part::text(*ins));
    c.messages.push_back(std::move(m));
    c.instructions = std::move(ins);
  }
  const json* input = jr::find(j, "input");
  if (!input)
    (root / "input").fail("Missing required parameter: 'input'.");
  if (input->is_string()) {
    message m;
    m.role = role::user;
    m.content.push_back(content_part::text(input->get<std::string>()));
    c.messages.push_back(std::move(m));
  } else {
    jr::array(*input, root / "input");
    assembler a{c};
    for (std::size_t i = 0; i < input->size(); ++i)
      parse_item((*input)[i], root / "input" / i, a);
  }
  if (c.messages.empty())
    (root / "input").fail("Invalid 'input': expected at least one item.");
  if (const json* t = jr::find(j, "tools"))
    parse_tools(*t, root / "tools", c);
  if (const json* tc = jr::find(j, "tool_choice")) {
    const auto p = root / "tool_choice";
    if (tc->is_string()) {
      const auto s = tc->get<std::string>();
      jr::one_of(s, {"none", "auto", "required"}, p);
      c.tool_choice.kind = s == "none" ? tool_choice::mode::none
                           : s == "auto" ? tool_choice::mode::automatic
                                         : tool_choice::mode::required;
    } else {
      jr::object(*tc, p);
      jr::one_of(jr::req_string(*tc, "type", p), {"function"}, p / "type");
      c.tool_choice.kind = tool_choice::mode::named;
      c.tool_choice.name = jr::req_string(*tc, "name", p);
    }
  }
  c.parallel_tool_calls = jr::opt_bool(j, "parallel_tool_calls", root).value_or(true);
  c.user = jr::opt_string(j, "user", root);
  if (const json* r = jr::find(j, "reasoning")) {
    jr::object(*r, root / "reasoning");
    if (auto e = jr::opt_string(*r, "effort", root / "reasoning")) {
      jr::one_of(*e, {"none", "minimal", "low", "medium", "high", "xhigh"}, root / "reasoning" / "effort");
      c.thinking = *e != "none";
      c.reasoning_effort = *e;
    }
  }
  auto& s = c.sampling;
  s.temperature = jr::opt_number(j, "temperature", root, 0, 2);
  s.top_p = jr::opt_number(j, "top_p", root, 0, 1);
  s.max_tokens = jr::opt_int(j, "max_output_tokens", root, 1, INT32_MAX);
  if (const json* text = jr::find(j, "text")) {
    jr::object(*text, root / "text");
    if (const json* f = jr::find(*text, "format"))
      c.format = rc::parse_format(*f, root / "text" / "format", false);
  }
  // Log-probabilities of the output text: asked for by `include` (OpenAI's switch) or by a
  // positive `top_logprobs` alone (what vLLM accepts).
  if (const json* inc = jr::find(j, "include"); inc && !inc->is_null()) {
    jr::array(*inc, root / "include");
    for (std::size_t i = 0; i < inc->size(); ++i) {
      const auto p = root / "include" / i;
      const auto what = jr::string((*inc)[i], p);
      jr::one_of(what, {"message.output_text.logprobs", "reasoning.encrypted_content", "file_search_call.results",
                        "web_search_call.results", "web_search_call.action.sources", "message.input_image.image_url",
                        "computer_call_output.output.image_url", "code_interpreter_call.outputs"},
                 p);
      if (what == "message.output_text.logprobs")
        s.logprobs = true;
    }
  }
  s.top_logprobs = jr::opt_int(j, "top_logprobs", root, 0, 20).value_or(0);
  if (s.top_logprobs > 0)
    s.logprobs = true;
  c.stream = jr::opt_bool(j, "stream", root).value_or(false);
  rc::finish(c, j, root);
  return c;
}

} // namespace deepinfer::recipe
