#pragma once

#include "recipe/protocol/conversation.hpp"
#include "recipe/protocol/json_reader.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::recipe::request_common {

/// Validates a function name the way OpenAI does (`^[a-zA-Z0-9_.-]{1,64}$`; we also allow `.` and
/// `:` which MCP tool names use).
void check_function_name(const std::string& name, const json_path& at);

/// Checks a tool's argument schema, `fn[key]` (OpenAI `parameters`, Anthropic `input_schema`):
/// absent, or a JSON Schema object whose `type`, when given, is "object". The arguments are
/// always a JSON object, so a schema for anything else could never be met (OpenAI and Anthropic
/// refuse it too). `fn` is the function object, `at` its path.
void check_parameters_schema(const json& fn, std::string_view key, const json_path& at);

/// A function tool's definition from its function object `fn` at `at` (Chat: the tool's
/// `function`; Responses: the tool less its `type`): its name (checked), description and
/// parameters (checked); `function` is `fn` as given.
tool_definition function_definition(json fn, const json_path& at);

/// An OpenAI `tools` array `v` at `at`: every element an object of `"type": "function"`, handed
/// to `tool(object, path)`, whose tool_definition is appended to `c.tools`.
template <class Tool>
void function_tools(const json& v, const json_path& at, conversation& c, Tool&& tool) {
  json_reader::array(v, at);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto p = at / i;
    const json& t = json_reader::object(v[i], p);
    json_reader::one_of(json_reader::req_string(t, "type", p), {"function"}, p / "type");
    c.tools.push_back(tool(t, p));
  }
}

/// Requires an `http(s)://` URL or a `data:image/...;base64,` URI.
void check_image_url(const std::string& url, const json_path& at);

/// Checks that a tool call's `arguments` text is a JSON object (empty text counts as `{}`).
void check_arguments(const std::string& arguments, const json_path& at);

/// Reads text-only content (string or array of text parts whose type is one of `text_types`) as one
/// string, parts joined by "\n\n".
std::string text_content(const json& v, const json_path& at, std::initializer_list<std::string_view> text_types);

/// Content given as a string (one text part) or as an array of part objects, each with a `type`
/// among `types`: `part(object, path, type)` builds the part of each object once its type has
/// been checked. `at` is the content's path.
template <class Part>
std::vector<content_part> content_parts(const json& v, const json_path& at, std::initializer_list<std::string_view> types,
                                        Part&& part) {
  if (v.is_string())
    return {content_part::text(v.get<std::string>())};
  json_reader::array(v, at);
  std::vector<content_part> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto p = at / i;
    const json& obj = json_reader::object(v[i], p);
    const auto type = json_reader::req_string(obj, "type", p);
    json_reader::one_of(type, types, p / "type");
    out.push_back(part(obj, p, type));
  }
  return out;
}

/// Validates the cross-API invariants once a conversation is built: a named tool choice names a
/// declared tool, and there is at least one message. `at` is the root path.
void check_conversation(const conversation& c, const json_path& at, std::string_view tools_key,
                        std::string_view choice_key);

/// The common tail of every parser: reads `metadata` and `cache_salt` and runs `check_conversation`.
void finish(conversation& c, const json& body, const json_path& root);

/// The sampling fields Chat Completions and legacy Completions share: temperature, top_p, top_k,
/// min_p, the penalties, min_tokens, ignore_eos, logit_bias and seed (not logprobs: their forms
/// differ), vLLM's `prompt_logprobs` and its output controls (`parse_vllm_sampling`).
void parse_openai_sampling(const json& body, const json_path& root, sampling& s);

/// `stream` and `stream_options` (`include_usage`; only with `stream`), as Chat Completions and
/// legacy Completions take them; a null `stream_options` is absent.
void parse_openai_stream(const json& body, const json_path& root, conversation& c);

/// Parses a `{"type": "json_schema", ...}` / `json_object` / `text` format object. `nested_schema`:
/// Chat nests name/schema/strict in `json_schema`, Responses puts them at the top.
std::optional<response_format> parse_format(const json& v, const json_path& at, bool nested_schema);

} // namespace deepinfer::recipe::request_common
