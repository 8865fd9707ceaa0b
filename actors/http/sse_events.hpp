#pragma once

#include <string_view>
#include <vector>

namespace deepinfer::actors::http {

/// The server-sent events of a chunk of SSE bytes, each with its closing blank line ("...\n\n");
/// a last piece without one is returned as it is. The views point into `chunk`.
inline std::vector<std::string_view> sse_events(std::string_view chunk) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0; at < chunk.size();) {
    const auto end = chunk.find("\n\n", at);
    const auto stop = end == std::string_view::npos ? chunk.size() : end + 2;
    out.push_back(chunk.substr(at, stop - at));
    at = stop;
  }
  return out;
}

} // namespace deepinfer::actors::http
