#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace deepinfer::kv {

/// Traffic class of a block; it selects the block's time to live (DESIGN §4.1).
enum class traffic_class : uint8_t { agent = 0, chatbot = 1 };

/// Time to live per traffic class, counted from the block's last use.
struct ttl_table {
  int64_t agent_ms = 3LL * 24 * 3600 * 1000;
  int64_t chatbot_ms = 7LL * 24 * 3600 * 1000;

  /// The TTL of `cls`.
  int64_t of(traffic_class cls) const { return cls == traffic_class::agent ? agent_ms : chatbot_ms; }

  /// The shortest TTL of any class: nothing whose last use is younger than this has expired.
  int64_t shortest() const { return agent_ms < chatbot_ms ? agent_ms : chatbot_ms; }
};

/// "agent" or "chatbot".
inline std::string_view to_string(traffic_class cls) {
  return cls == traffic_class::agent ? "agent" : "chatbot";
}

/// Parses what `to_string` writes; `nullopt` for anything else.
inline std::optional<traffic_class> parse_traffic_class(std::string_view text) {
  if (text == "agent")
    return traffic_class::agent;
  if (text == "chatbot")
    return traffic_class::chatbot;
  return std::nullopt;
}

} // namespace deepinfer::kv
