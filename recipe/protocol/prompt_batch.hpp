#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recipe/protocol/api_error.hpp"

namespace deepinfer::recipe {

/// Legacy Completions' batched prompt: OpenAI and vLLM take `prompt` as a list of strings or a
/// list of token-id lists, and answer every prompt's choices in one body (choice index = prompt
/// index x n + the choice's own index).
struct prompt_batch {
  /// The request body once per prompt, each with that prompt alone; empty when the body holds
  /// one prompt (or is not valid JSON: the request's own parse answers that).
  std::vector<std::string> bodies;
  /// Each prompt's choices (the request's `n`, 1 when absent or not a small positive number: the
  /// parts' own parse refuses a bad one).
  int n = 1;
  /// Set when the batch cannot be served (more than `max_prompts` prompts).
  std::optional<api_error> error;
};

/// Splits a Completions body whose `prompt` lists two or more prompts.
prompt_batch split_prompt_batch(std::string_view body, std::size_t max_prompts);

} // namespace deepinfer::recipe
