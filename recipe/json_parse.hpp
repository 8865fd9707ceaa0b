#pragma once

#include "recipe/base/expected.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deepinfer::recipe {

/// Limits every JSON text from a client is parsed under (request bodies, tool-call arguments,
/// arguments the model wrote): the same for the server and the offline tools.
struct json_limits {
  /// Deepest nesting of arrays and objects accepted; the top-level value is depth 1. Enforced
  /// while parsing, so a deeper text is refused before any of it is built. At most
  /// `max_depth_ceiling`.
  std::size_t max_depth = 64;

  /// The largest `max_depth` a configuration may set. Text that was validated under the
  /// configured limit and is parsed again later (tool-call arguments at render time) is parsed
  /// under this one, so it is never refused the second time.
  static constexpr std::size_t max_depth_ceiling = 512;
  /// `json_limits{max_depth_ceiling}`.
  static json_limits ceiling() { return {max_depth_ceiling}; }
};

/// Why a JSON text was refused.
struct json_parse_error {
  enum class kind : std::uint8_t { syntax, too_deep };
  kind what = kind::syntax;
  /// Byte offset of a syntax error (0 for `too_deep`).
  std::size_t position = 0;
  /// A sentence for the client, saying what to change.
  std::string message;
};

/// Parses `text` as one JSON value (RFC 8259, no comments) into an `ordered_json` that keeps the
/// key order, in time linear in the text: objects are built once with their final size (a
/// duplicate key keeps its first position and its last value, as Python's `json` does), never
/// grown key by key (nlohmann's own builder searches every earlier key and copies earlier values
/// when an object grows). Nesting deeper than `limits.max_depth` stops the parse at once.
expected<nlohmann::ordered_json, json_parse_error> parse_json(std::string_view text, const json_limits& limits = {});

/// JSON escapes UTF-16 code units: "\ud83d\ude00" is one emoji, and half of one alone (what
/// JavaScript's JSON.stringify writes for a string cut inside an emoji) is no character. The JSON
/// library refuses such a text whole, while Python's json (behind the OpenAI and Anthropic APIs
/// and vLLM) takes it. `parse_json` reads each lone half as "\ufffd" (U+FFFD, what a browser's
/// TextEncoder makes of one): this is that text, or nullopt when it has none. Same length, so the
/// byte offsets of later parse errors still point into what the client sent.
std::optional<std::string> replace_lone_surrogates(std::string_view text);

} // namespace deepinfer::recipe
