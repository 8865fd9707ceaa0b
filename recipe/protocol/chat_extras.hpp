#pragma once

#include "recipe/protocol/conversation.hpp"
#include "recipe/protocol/json_reader.hpp"

namespace deepinfer::recipe {

/// The Chat Completions fields beyond the current OpenAI ones, read after `tools`, `tool_choice`
/// and the thinking switches:
/// - OpenAI's deprecated `functions` / `function_call`, mapped onto tools / tool_choice (so the
///   answer carries `tool_calls`); a 400 when given together with `tools` / `tool_choice`;
/// - vLLM's `chat_template_kwargs`: `thinking` / `enable_thinking` (booleans) turn thinking on
///   or off, over `reasoning_effort` and `thinking`; other keys are ignored, as a template that
///   does not use them ignores them;
/// - vLLM's `continue_final_message` (conversation::continue_final; a 400 with
///   `add_generation_prompt: true` or when the last message is not the assistant's);
/// - OpenAI's `prediction` (Predicted Outputs; sampling::prediction);
/// - `modalities` with "audio" and `audio`: a 400 (no audio output).
void parse_chat_extras(const json& body, const json_path& root, conversation& c);

} // namespace deepinfer::recipe
