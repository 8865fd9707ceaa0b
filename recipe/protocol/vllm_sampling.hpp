#pragma once

#include "recipe/protocol/conversation.hpp"
#include "recipe/protocol/json_reader.hpp"

namespace deepinfer::recipe {

/// vLLM's output controls beyond OpenAI's, read by Chat Completions and legacy Completions (the
/// APIs vLLM accepts them on), with vLLM's types and limits:
/// - `stop_token_ids` (ids that end the answer like EOS; at most 64),
/// - `include_stop_str_in_output`, `skip_special_tokens`, `spaces_between_special_tokens`
///   (accepted; the tokenizer's byte-level decoding never inserts spaces),
/// - `allowed_token_ids` (a non-empty list when given), `bad_words` (at most 64 non-blank
///   strings), `return_tokens_as_token_ids`, `truncate_prompt_tokens` (-1 or at least 1).
/// Token ids are checked against the vocabulary later, by the server that knows it.
void parse_vllm_sampling(const json& body, const json_path& root, sampling& s);

} // namespace deepinfer::recipe
