#include "actors/http/http_request.hpp"

#include <algorithm>
#include <cctype>

namespace deepinfer::actors::http {

std::optional<std::string_view> http_request::header(std::string_view name) const {
  auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) ==
                    std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (const auto& [key, value] : headers)
    if (same(key, name))
      return std::string_view{value};
  return std::nullopt;
}

} // namespace deepinfer::actors::http
