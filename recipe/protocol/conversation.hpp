#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace deepinfer::recipe {

/// Which public API a request arrived on (decides error bodies and the stream encoder).
/// `completions` is OpenAI's legacy `/v1/completions`: a raw prompt in, text out, no template.
enum class api_kind : std::uint8_t { chat, responses, messages, completions };

/// Who wrote a message. `developer` is OpenAI's newer name for a system prompt; `tool` carries one
/// tool result.
enum class role : std::uint8_t { system, developer, user, assistant, tool };

/// One part of a message body: text or an image (given as URL or `data:` URI, passed on untouched
/// to the vision path).
struct content_part {
  enum class kind : std::uint8_t { text, image };
  kind type = kind::text;
  /// The text, or the image URL / data URI.
  std::string value;
  /// An image: how many placeholder positions the renderer writes for it (its vision-encoder
  /// tokens, set by the entrypoint once the image is decoded).
  int64_t image_tokens = 1;
  /// An image: the request field that gave it (`messages[0].content[1].image_url.url`), which
  /// its 400s name; empty for images that did not come from a request body.
  std::string path = {};

  static content_part text(std::string s) { return {kind::text, std::move(s)}; }
  static content_part image(std::string url, std::string path = {}) {
    return {kind::image, std::move(url), 1, std::move(path)};
  }
};

/// A tool call made by an earlier assistant turn.
struct tool_call {
  /// The API's id (`call_…`, `toolu_…`); used to order tool results, never rendered.
  std::string id;
  std::string name;
  /// The arguments as a JSON object in text form (OpenAI's `arguments` string; Anthropic's `input`
  /// re-serialised).
  std::string arguments;
};

/// One message of the conversation, whatever API it came from.
struct message {
  recipe::role role = recipe::role::user;
  /// Body parts in order; an absent or null body is empty.
  std::vector<content_part> content;
  /// Prior reasoning of an assistant turn (`reasoning_content`, reasoning items, thinking blocks).
  std::optional<std::string> reasoning;
  /// Tool calls of an assistant turn.
  std::vector<tool_call> tool_calls;
  /// For a tool result: the id of the call it answers.
  std::string tool_call_id;
};

/// A function the model may call.
struct tool_definition {
  std::string name;
  /// The function object as the client gave it (`{"name", "description", "parameters", ...}`, key
  /// order kept); rendered into the tools text.
  nlohmann::ordered_json function;
};

/// How the model may use the tools.
struct tool_choice {
  enum class mode : std::uint8_t { automatic, none, required, named };
  mode kind = mode::automatic;
  /// The function name for `named`.
  std::string name;
};

/// The structured-output request (`response_format`, `text.format`, Anthropic `output_config.format`).
struct response_format {
  enum class mode : std::uint8_t { text, json_object, json_schema };
  mode kind = mode::text;
  std::string name;
  /// The JSON schema for `json_schema`.
  nlohmann::ordered_json schema;
  bool strict = false;
  /// The request's own object, as rendered into the system prompt (spec §2.1).
  nlohmann::ordered_json original;
};

/// vLLM's `structured_outputs` extension (accepted on every API): a constraint that is enforced
/// by token masks but, unlike `response_format`, not written into the prompt.
struct structured_outputs {
  enum class mode : std::uint8_t { json_schema, json_object, regex, grammar };
  mode kind = mode::json_schema;
  /// The JSON Schema text, the regex (`choice` becomes one: an alternation of the literals), or
  /// the Lark-style grammar (nothing for `json_object: true`, any JSON object).
  std::string text;
};

/// Sampling and length controls; unset means the server default.
struct sampling {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<std::int64_t> top_k;
  /// vLLM's: drop tokens less likely than min_p times the most likely one (0 to 1).
  std::optional<double> min_p;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  /// vLLM's extensions (Chat Completions): repetition_penalty, min_tokens, and OpenAI's
  /// logit_bias as (token id, bias) pairs.
  std::optional<double> repetition_penalty;
  std::optional<std::int64_t> min_tokens;
  std::vector<std::pair<std::int32_t, double>> logit_bias;
  /// vLLM's: generate through EOS up to max_tokens.
  bool ignore_eos = false;
  /// Report each output token's log-probability and this many alternatives (0 to 20).
  bool logprobs = false;
  std::int64_t top_logprobs = 0;
  /// Score the prompt's tokens too, with this many alternatives (legacy Completions' `echo`
  /// with `logprobs`); -1: no.
  std::int64_t prompt_logprobs = -1;
  /// vLLM's `prompt_logprobs` (Chat and legacy Completions): the prompt's tokens scored, with this
  /// many alternatives, in vLLM's shape (`prompt_logprobs` on the body); -1: not asked.
  std::int64_t vllm_prompt_logprobs = -1;
  std::optional<std::int64_t> seed;
  std::optional<std::int64_t> max_tokens;
  std::vector<std::string> stop;
  /// vLLM's output controls (Chat and legacy Completions; `recipe/protocol/vllm_sampling.hpp`):
  /// token ids that end the answer like EOS (`stop_reason` names the one that did);
  std::vector<std::int32_t> stop_token_ids;
  /// the stop string (or stop token's text) that ended the answer kept at its end;
  bool include_stop_str_in_output = false;
  /// special tokens the model generates left out of the text (false: written as their text);
  bool skip_special_tokens = true;
  /// only these ids may be generated (empty: any);
  std::vector<std::int32_t> allowed_token_ids;
  /// words the output may not contain (each banned as the token sequences that spell it);
  std::vector<std::string> bad_words;
  /// log-probability entries name their token `token_id:N` instead of its text;
  bool return_tokens_as_token_ids = false;
  /// only the prompt's last this many tokens are kept (left truncation, after the template);
  /// -1: as many as fit with the output.
  std::optional<std::int64_t> truncate_prompt_tokens;
  /// OpenAI's Predicted Outputs (`prediction: {type: "content", content}`, Chat): the text the
  /// answer is expected to be; its tokens are verified as drafts (the answer does not change).
  std::string prediction;
  /// OpenAI's `n` (Chat and legacy Completions): this many choices, sampled in parallel from
  /// one prefill of the prompt (1 to 16).
  std::int64_t n = 1;
};

/// The prompt of a legacy completion (`/v1/completions`), tokenized as it is: no template.
struct raw_prompt {
  /// The text (after the BOS the tokenizer's template begins every prompt with)...
  std::string text;
  /// ... or the token ids themselves (`prompt: [1, 2, 3]`), used unchanged.
  std::vector<std::int32_t> ids;
  bool is_ids = false;
  /// `echo`: the answer's text starts with the prompt (and with `logprobs`, so does its
  /// log-probability list: the prompt's tokens scored, the first one null).
  bool echo = false;
  /// `suffix` (DeepSeek's FIM completion): the text after the hole; the prompt is then the text
  /// before it, and the model writes what goes between (fill-in-the-middle).
  std::optional<std::string> suffix;
};

/// The API-neutral form of a request: what the renderer reads and the entrypoint schedules.
struct conversation {
  api_kind api = api_kind::chat;
  std::string model;
  /// Set for `api_kind::completions` only (which has no messages).
  std::optional<recipe::raw_prompt> prompt;
  std::vector<message> messages;
  std::vector<tool_definition> tools;
  recipe::tool_choice tool_choice;
  bool parallel_tool_calls = true;
  /// Thinking mode (spec §2.7): on when the request asks for reasoning.
  bool thinking = false;
  /// Requested effort as the API spelled it (`low`, `high`, …); empty means the default.
  std::string reasoning_effort;
  /// Anthropic `thinking.budget_tokens`, when given.
  std::optional<std::int64_t> thinking_budget;
  recipe::sampling sampling;
  std::optional<recipe::response_format> format;
  std::optional<recipe::structured_outputs> structured;
  /// vLLM's `structured_outputs.disable_any_whitespace`: a JSON output (format, structured
  /// outputs, forced tool call arguments) written with no whitespace between tokens.
  bool compact_json = false;
  /// vLLM's Chat `echo`: the answer's content starts with the final message's text when that
  /// message is the assistant's (a prefill echoed back, as vLLM does).
  bool echo_final = false;
  bool stream = false;
  /// Chat Completions `stream_options.include_usage`.
  bool stream_include_usage = false;
  /// vLLM's `stream_options.continuous_usage_stats` (with `include_usage`): every chunk carries
  /// the usage so far instead of `"usage": null`.
  bool stream_continuous_usage = false;
  /// Client metadata, echoed back by the Responses API.
  nlohmann::ordered_json metadata;
  /// OpenAI's `user` (an end-user id for abuse monitoring): echoed back by the Responses API.
  std::optional<std::string> user;
  /// Anthropic `system` / Responses `instructions`, already folded into `messages`; kept for echo.
  std::optional<std::string> instructions;
  /// `cache_salt` (vLLM's name; accepted on every API): the prefix-cache namespace this request
  /// reads and writes, so only requests with the same salt (and API key) share cached prefixes.
  /// Empty: the key's namespace, or the shared one without keys.
  std::string cache_salt;
  /// Responses `store` (default true: the entrypoint keeps the response for GET and for a later
  /// `previous_response_id`) and `previous_response_id` (the stored turn this one continues).
  bool store = true;
  std::string previous_response_id;
  /// Responses `background`: the create call answers at once with the response `queued`; the
  /// turn runs on, is stored when it ends (GET polls it) and can be cancelled. Needs `store`.
  bool background = false;
  /// The answer continues the final assistant message instead of starting a new one (Anthropic's
  /// prefill, whenever the last message is the assistant's; vLLM's `continue_final_message` on
  /// Chat): that message is rendered open (no EOS, no new turn after it). See `continuation_of`.
  bool continue_final = false;
  /// Responses `truncation: "auto"`: a conversation longer than the context loses its oldest
  /// turns (whole turns, from a user message on; the leading system messages stay) until it fits,
  /// instead of a 400.
  bool truncate_auto = false;
};

/// Where a continued answer picks up (conversation::continue_final): not at all; inside the
/// final assistant message's reasoning (thinking on, the message has reasoning and neither text
/// nor tool calls: the reasoning is left open); or in its text (the reasoning, if any, closed).
enum class continuation : std::uint8_t { none, reasoning, content };

inline continuation continuation_of(const conversation& c) {
  if (!c.continue_final || c.messages.empty() || c.messages.back().role != role::assistant)
    return continuation::none;
  const auto& m = c.messages.back();
  const bool text = std::any_of(m.content.begin(), m.content.end(), [](const content_part& p) { return !p.value.empty(); });
  return c.thinking && !text && m.tool_calls.empty() ? continuation::reasoning : continuation::content;
}

} // namespace deepinfer::recipe
