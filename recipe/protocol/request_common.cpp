#include "recipe/protocol/request_common.hpp"

#include "recipe/protocol/structured_fields.hpp"
#include "recipe/protocol/vllm_sampling.hpp"

#include <charconv>
#include <utility>

namespace deepinfer::recipe::request_common {

namespace jr = json_reader;

void check_function_name(const std::string& name, const json_path& at) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                c == '.' || c == ':');
  if (!ok)
    at.fail("Invalid function name: '" + name + "'. Expected a string that matches the pattern '^[a-zA-Z0-9_.:-]{1,64}$'.");
}

void check_parameters_schema(const json& fn, std::string_view key, const json_path& at) {
  const json* params = jr::find(fn, key);
  if (!params)
    return;
  const auto p = at / key;
  jr::object(*params, p);
  if (const json* type = jr::find(*params, "type"); type && *type != "object")
    p.fail("Invalid schema for function '" + jr::opt_string(fn, "name", at).value_or("") +
           "': schema must be a JSON Schema of 'type: \"object\"', got 'type: " + type->dump() + "'.");
}

tool_definition function_definition(json fn, const json_path& at) {
  tool_definition d;
  d.name = jr::req_string(fn, "name", at);
  check_function_name(d.name, at / "name");
  jr::opt_string(fn, "description", at);
  check_parameters_schema(fn, "parameters", at);
  d.function = std::move(fn);
  return d;
}

void check_image_url(const std::string& url, const json_path& at) {
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0)
    return;
  if (url.rfind("data:image/", 0) == 0 && url.find(";base64,") != std::string::npos)
    return;
  at.fail("Invalid image URL: expected an http(s) URL or a base64 data URI (data:image/...;base64,...).");
}

void parse_openai_sampling(const json& j, const json_path& root, sampling& s) {
  s.temperature = jr::opt_number(j, "temperature", root, 0, 2);
  s.top_p = jr::opt_number(j, "top_p", root, 0, 1);
  s.top_k = jr::opt_int(j, "top_k", root, -1, 1 << 20);
  s.min_p = jr::opt_number(j, "min_p", root, 0, 1);
  // vLLM's prompt_logprobs: each prompt token's logprob and rank with this many alternatives
  // (true: 1, as vLLM's validation coerces it), scored by a cold prefill of the whole prompt.
  if (const json* pl = jr::find(j, "prompt_logprobs"); pl && !pl->is_null()) {
    if (pl->is_boolean())
      s.vllm_prompt_logprobs = pl->get<bool>() ? 1 : -1;
    else
      s.vllm_prompt_logprobs = *jr::opt_int(j, "prompt_logprobs", root, 0, 20);
  }
  s.presence_penalty = jr::opt_number(j, "presence_penalty", root, -2, 2);
  s.frequency_penalty = jr::opt_number(j, "frequency_penalty", root, -2, 2);
  s.repetition_penalty = jr::opt_number(j, "repetition_penalty", root, 0.01, 100);
  s.min_tokens = jr::opt_int(j, "min_tokens", root, 0, INT32_MAX);
  s.ignore_eos = jr::opt_bool(j, "ignore_eos", root).value_or(false);
  if (const json* lb = jr::find(j, "logit_bias"); lb && !lb->is_null()) {
    jr::object(*lb, root / "logit_bias");
    for (const auto& [key, v] : lb->items()) {
      std::int32_t id = -1;
      auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc{} || end != key.data() + key.size() || id < 0)
        (root / "logit_bias" / key).fail("Invalid key: logit_bias keys must be token ids.");
      if (!v.is_number() || v.get<double>() < -100 || v.get<double>() > 100)
        (root / "logit_bias" / key).fail("Invalid value: a bias must be a number from -100 to 100.");
      s.logit_bias.emplace_back(id, v.get<double>());
    }
  }
  s.seed = jr::opt_int(j, "seed", root, INT64_MIN, INT64_MAX);
  s.n = jr::opt_int(j, "n", root, 1, 16).value_or(1);
  parse_vllm_sampling(j, root, s);
}

void parse_openai_stream(const json& j, const json_path& root, conversation& c) {
  c.stream = jr::opt_bool(j, "stream", root).value_or(false);
  if (const json* so = jr::find(j, "stream_options"); so && !so->is_null()) {
    jr::object(*so, root / "stream_options");
    if (!c.stream)
      (root / "stream_options").fail("The 'stream_options' parameter is only allowed when 'stream' is enabled.");
    c.stream_include_usage = jr::opt_bool(*so, "include_usage", root / "stream_options").value_or(false);
    c.stream_continuous_usage =
      c.stream_include_usage && jr::opt_bool(*so, "continuous_usage_stats", root / "stream_options").value_or(false);
  }
}

void check_arguments(const std::string& arguments, const json_path& at) {
  if (arguments.empty())
    return;
  auto j = parse_json(arguments, at.limits());
  if (!j && j.error().what == json_parse_error::kind::too_deep)
    at.fail("Invalid value: the function arguments are too deeply nested: " + j.error().message + ".");
  if (!j || !j->is_object())
    at.fail("Invalid value: function arguments must be a JSON object encoded as a string.");
}

std::string text_content(const json& v, const json_path& at, std::initializer_list<std::string_view> text_types) {
  if (v.is_string())
    return v.get<std::string>();
  jr::array(v, at);
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto p = at / i;
    const json& part = jr::object(v[i], p);
    const auto type = jr::req_string(part, "type", p);
    jr::one_of(type, text_types, p / "type");
    if (i > 0)
      out += "\n\n";
    out += jr::req_string(part, type == "refusal" ? "refusal" : "text", p);
  }
  return out;
}

void check_conversation(const conversation& c, const json_path& at, std::string_view tools_key,
                        std::string_view choice_key) {
  if (c.tool_choice.kind == tool_choice::mode::named) {
    bool found = false;
    for (const auto& t : c.tools)
      found = found || t.name == c.tool_choice.name;
    if (!found)
      (at / choice_key).fail("Invalid value: tool '" + c.tool_choice.name + "' is not declared in '" +
                             std::string(tools_key) + "'.");
  }
  if (c.tool_choice.kind == tool_choice::mode::required && c.tools.empty())
    (at / choice_key).fail("Invalid value: tool_choice requires tools, but no tools were given.");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < c.tools.size(); ++i) {
    for (const auto& n : names)
      if (n == c.tools[i].name)
        (at / tools_key / i).fail("Duplicate tool name: '" + n + "'.");
    names.push_back(c.tools[i].name);
  }
}

void finish(conversation& c, const json& body, const json_path& root) {
  if (const json* md = jr::find(body, "metadata"))
    c.metadata = jr::object(*md, root / "metadata");
  if (auto salt = jr::opt_string(body, "cache_salt", root)) {
    if (salt->empty() || salt->size() > 256)
      (root / "cache_salt").fail("Invalid value: 'cache_salt' must be a string of 1 to 256 characters.");
    c.cache_salt = std::move(*salt);
  }
  parse_structured_outputs(c, body, root);
  check_conversation(c, root, "tools", "tool_choice");
  // vLLM refuses it too: the scores come with the whole body.
  if (c.stream && c.sampling.vllm_prompt_logprobs >= 0)
    (root / "prompt_logprobs").fail("Invalid value: 'prompt_logprobs' is not available with 'stream': true.");
}

std::optional<response_format> parse_format(const json& v, const json_path& at, bool nested_schema) {
  jr::object(v, at);
  response_format f;
  const auto type = jr::req_string(v, "type", at);
  jr::one_of(type, {"text", "json_object", "json_schema"}, at / "type");
  f.original = v;
  if (type == "text")
    return std::nullopt;
  if (type == "json_object") {
    f.kind = response_format::mode::json_object;
    return f;
  }
  f.kind = response_format::mode::json_schema;
  const json* holder = &v;
  json_path hp = at;
  if (nested_schema) {
    hp = at / "json_schema";
    const json* js = jr::find(v, "json_schema");
    if (!js)
      hp.fail("Missing required parameter: '" + hp.str() + "'.");
    holder = &jr::object(*js, hp);
  }
  f.name = jr::req_string(*holder, "name", hp);
  if (const json* s = jr::find(*holder, "schema"))
    f.schema = jr::object(*s, hp / "schema");
  else
    f.schema = json::object();
  f.strict = jr::opt_bool(*holder, "strict", hp).value_or(false);
  return f;
}

} // namespace deepinfer::recipe::request_common
