#pragma once

// A byte vocabulary for parser tests and fuzzing: byte b is token 1000 + b, so every multi-byte
// UTF-8 character is split across tokens. Special segments keep their table ids.

#include "recipe/prompt_segment.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::recipe::test {

inline constexpr token_id byte_base = 1000;

/// The one-byte text of a byte token. Precondition: byte_base <= id < byte_base + 256.
inline std::string_view byte_token(token_id id) {
  static const std::string bytes = [] {
    std::string b(256, '\0');
    for (int i = 0; i < 256; ++i)
      b[static_cast<std::size_t>(i)] = static_cast<char>(i);
    return b;
  }();
  return std::string_view(bytes).substr(static_cast<std::size_t>(id - byte_base), 1);
}

/// Segments as byte tokens (specials as their ids).
inline std::vector<token_id> byte_ids(const prompt_segments& segs) {
  std::vector<token_id> out;
  for (const auto& s : segs) {
    if (s.special_id) {
      out.push_back(*s.special_id);
      continue;
    }
    for (unsigned char c : s.text)
      out.push_back(byte_base + c);
  }
  return out;
}

} // namespace deepinfer::recipe::test
