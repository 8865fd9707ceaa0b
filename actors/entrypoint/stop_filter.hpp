#pragma once

#include <span>
#include <string>
#include <vector>

#include "recipe/stream/stream_event.hpp"

namespace deepinfer::actors {

/// Applies a request's stop strings to the answer text as it streams: content that could still
/// be the start of a stop string is held back, and at the first complete stop string the text
/// before it is released, a `finish` (stop) event ends the stream, and `stopped()` turns true.
/// Reasoning and tool-call events pass unchanged (held content is released before them).
class stop_filter {
public:
  explicit stop_filter(std::vector<std::string> stops);

  /// The events to send for `events`; after a stop, returns nothing more.
  std::vector<recipe::stream_event> apply(std::span<const recipe::stream_event> events);

  /// True once a stop string matched.
  bool stopped() const noexcept { return stopped_; }

private:
  void release(std::vector<recipe::stream_event>& out, std::size_t n);

  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

} // namespace deepinfer::actors
