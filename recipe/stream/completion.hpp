#pragma once

#include "recipe/stream/stream_event.hpp"

#include <span>
#include <string>
#include <vector>

namespace deepinfer::recipe {

/// The whole answer rebuilt from stream events: what the non-streaming bodies report and what
/// the encoders' final events repeat.
struct completion {
  struct call {
    std::string id;
    std::string name;
    std::string arguments;
    bool done = false;
  };
  std::string reasoning;
  std::string content;
  std::vector<call> calls;
  finish_reason reason = finish_reason::stop;
  /// The stop sequence that ended the answer; empty for EOS, length and tool calls.
  std::string stop_sequence;
  /// The stop token id that ended it (vLLM's `stop_token_ids`); -1: none.
  std::int32_t stop_token = -1;
  bool finished = false;

  /// Folds events in.
  void apply(std::span<const stream_event> events);
};

} // namespace deepinfer::recipe
