#pragma once

// Image files for tests that send or decode images: base64 and PNG bytes of given pixels
// (stb_image_write, which Debian's libstb ships compiled).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <stb_image_write.h>

namespace deepinfer::recipe::test {

/// Standard base64 with padding.
inline std::string base64(const std::string& in) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16;
    if (i + 1 < in.size())
      v |= static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8;
    if (i + 2 < in.size())
      v |= static_cast<uint8_t>(in[i + 2]);
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += i + 1 < in.size() ? abc[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? abc[v & 63] : '=';
  }
  return out;
}

/// A PNG file of w x h 8-bit RGB pixels; empty when stb cannot write it.
inline std::string png_file(int w, int h, const std::vector<uint8_t>& px) {
  std::string out;
  auto append = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &out, w, h, 3, px.data(), w * 3))
    out.clear();
  return out;
}

} // namespace deepinfer::recipe::test
