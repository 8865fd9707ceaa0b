#include "recipe/stream/completion.hpp"

namespace deepinfer::recipe {

void completion::apply(std::span<const stream_event> events) {
  for (const auto& e : events) {
    switch (e.type) {
      case stream_event::kind::reasoning: reasoning += e.text; break;
      case stream_event::kind::content: content += e.text; break;
      case stream_event::kind::tool_call_start:
        if (calls.size() <= e.tool_index)
          calls.resize(e.tool_index + 1);
        calls[e.tool_index].id = e.tool_id;
        calls[e.tool_index].name = e.tool_name;
        break;
      case stream_event::kind::tool_call_arguments:
        if (calls.size() <= e.tool_index)
          calls.resize(e.tool_index + 1);
        calls[e.tool_index].arguments += e.text;
        break;
      case stream_event::kind::tool_call_end:
        if (e.tool_index < calls.size())
          calls[e.tool_index].done = true;
        break;
      case stream_event::kind::finish:
        reason = e.reason;
        stop_sequence = e.text;
        stop_token = e.stop_token;
        finished = true;
        break;
    }
  }
}

} // namespace deepinfer::recipe
