#pragma once

#include <cstdint>
#include <string>

namespace deepinfer::recipe {

/// What every chunk of an OpenAI-style stream names and how the stream ends: shared by Chat
/// Completions (`chat_encoder`) and the legacy Completions (`completions_encoder`).
struct openai_stream_config {
  std::string id;
  std::string model;
  std::int64_t created = 0;
  /// `stream_options.include_usage`: every chunk carries `"usage": null` and a usage chunk ends.
  bool include_usage = false;
  /// vLLM's `continuous_usage_stats` (with `include_usage`): every chunk carries the usage so
  /// far (`usage_now`) instead of null.
  bool continuous_usage = false;
  /// The choice this encoder writes (OpenAI's `n`: one encoder per choice, chunks interleaved).
  int index = 0;
  /// Its finish also ends the stream (usage chunk, `[DONE]`); false for every choice of an
  /// `n` > 1 request, whose stream `end` closes once all have finished.
  bool ends_stream = true;
};

} // namespace deepinfer::recipe
