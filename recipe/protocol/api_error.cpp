#include "recipe/protocol/api_error.hpp"

#include <nlohmann/json.hpp>

namespace deepinfer::recipe {

std::string api_error::body() const {
  nlohmann::ordered_json j;
  if (api == api_kind::messages) {
    j["type"] = "error";
    j["error"]["type"] = type;
    j["error"]["message"] = param.empty() ? message : param + ": " + message;
  } else {
    j["error"]["message"] = message;
    j["error"]["type"] = type;
    j["error"]["param"] = param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(param);
    j["error"]["code"] = !code.empty()    ? nlohmann::ordered_json(code)
                         : status == 400 ? nlohmann::ordered_json("invalid_value")
                                         : nlohmann::ordered_json();
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string shown_value(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes)
    return std::string{text};
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end;
  return std::string{text.substr(0, end)} + "...";
}

} // namespace deepinfer::recipe
