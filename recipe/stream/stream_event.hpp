#pragma once

#include <cstdint>
#include <string>

namespace deepinfer::recipe {

/// Why generation ended: the model's EOS (`stop`), the token limit (`length`), or EOS after tool
/// calls (`tool_calls`).
enum class finish_reason : std::uint8_t { stop, length, tool_calls };

/// One piece of parsed model output. Text fields are complete UTF-8.
struct stream_event {
  enum class kind : std::uint8_t {
    reasoning,           ///< `text`: reasoning text
    content,             ///< `text`: answer text
    tool_call_start,     ///< `tool_index`, `tool_id`, `tool_name`: a call whose name is now known
    tool_call_arguments, ///< `tool_index`, `text`: the next fragment of the arguments JSON
    tool_call_end,       ///< `tool_index`: the arguments are complete
    finish,              ///< `reason`: the last event of a stream; `text`: the stop sequence that ended it, if any;
                         ///< `stop_token`: the stop id that did
  };
  kind type = kind::content;
  std::string text;
  std::uint32_t tool_index = 0;
  std::string tool_id;
  std::string tool_name;
  finish_reason reason = finish_reason::stop;
  /// `finish` only: the stop token id that ended the stream (vLLM's `stop_token_ids`); -1: none.
  std::int32_t stop_token = -1;
};

/// Token counts of one generation, for the APIs' `usage`.
struct usage_counts {
  std::int64_t prompt_tokens = 0;
  /// Prompt tokens served from the prefix cache.
  std::int64_t cached_tokens = 0;
  std::int64_t completion_tokens = 0;
  /// Completion tokens spent before `</think>`.
  std::int64_t reasoning_tokens = 0;
  /// OpenAI's Predicted Outputs: the prediction's drafted tokens the answer took, and those
  /// verified and turned down (they cost the steps that verified them).
  std::int64_t accepted_prediction_tokens = 0;
  std::int64_t rejected_prediction_tokens = 0;
};

} // namespace deepinfer::recipe
