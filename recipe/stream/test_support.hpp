#pragma once

// Helpers of the stream encoders' tests.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace deepinfer::recipe::testing {

// The JSON payloads of an SSE text, in order.
inline std::vector<nlohmann::json> payloads(const std::string& sse) {
  std::vector<nlohmann::json> out;
  std::size_t at = 0;
  while ((at = sse.find("data: ", at)) != std::string::npos) {
    const auto end = sse.find("\n\n", at);
    const auto data = sse.substr(at + 6, end - at - 6);
    if (data != "[DONE]")
      out.push_back(nlohmann::json::parse(data));
    at = end;
  }
  return out;
}

} // namespace deepinfer::recipe::testing
