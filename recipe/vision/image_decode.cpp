#include "recipe/vision/image_decode.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <utility>

#include <stb_image.h>
#include <webp/decode.h>
#include <webp/demux.h>

namespace deepinfer::recipe {

namespace {

bool is_png(std::string_view b) {
  return b.size() >= 8 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0;
}

/// A PNG's width and height from its IHDR chunk (the first chunk, bytes 8-23), read before stb:
/// stb's header scan refuses an image over 2^30 decoded bytes as "unknown image type", and such
/// a one (a few hundred bytes declaring 30000 x 30000) deserves the pixel limit's message.
std::pair<int64_t, int64_t> png_size(std::string_view b) {
  if (b.size() < 24 || std::memcmp(b.data() + 12, "IHDR", 4) != 0)
    return {0, 0};
  auto be32 = [&](std::size_t at) {
    int64_t v = 0;
    for (std::size_t i = 0; i < 4; ++i)
      v = (v << 8) | static_cast<uint8_t>(b[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

bool is_jpeg(std::string_view b) {
  return b.size() >= 3 && static_cast<uint8_t>(b[0]) == 0xFF && static_cast<uint8_t>(b[1]) == 0xD8 &&
         static_cast<uint8_t>(b[2]) == 0xFF;
}

bool is_gif(std::string_view b) {
  return b.size() >= 6 && (b.substr(0, 6) == "GIF87a" || b.substr(0, 6) == "GIF89a");
}

bool is_webp(std::string_view b) {
  return b.size() >= 12 && b.substr(0, 4) == "RIFF" && b.substr(8, 4) == "WEBP";
}

const char* const formats = "PNG, JPEG, GIF or WebP";

/// Whether w x h pixels are over the limit, without computing a product that could overflow (a
/// PNG header declares each side in 32 bits).
bool over_limit(int64_t w, int64_t h, const image_limits& limits) {
  return w > 0 && h > 0 && h > limits.max_pixels / w;
}

std::string too_many_pixels(int64_t w, int64_t h, const image_limits& limits) {
  return "the image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels; at most " +
         std::to_string(limits.max_pixels) + " pixels are accepted (scale it down)";
}

/// Why stb refused the image, and what to send instead.
std::string stb_refusal() {
  return std::string{"the image cannot be decoded ("} + stbi_failure_reason() + "); send a valid " + formats + " file";
}

/// WebP (libwebp): a still image whole; an animated one's first frame, composed on its canvas
/// as a viewer shows it (as stb does with a GIF). Alpha is dropped, as stb drops a PNG's.
expected<decoded_image, std::string> decode_webp(std::string_view bytes, const image_limits& limits) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  auto broken = [] { return std::string{"the image cannot be decoded (a broken WebP file); send a valid "} + formats + " file"; };
  WebPBitstreamFeatures f;
  if (WebPGetFeatures(data, bytes.size(), &f) != VP8_STATUS_OK)
    return broken();
  if (f.width <= 0 || f.height <= 0)
    return std::string{"the image has no pixels"};
  if (over_limit(f.width, f.height, limits))
    return too_many_pixels(f.width, f.height, limits);
  decoded_image out;
  out.width = f.width;
  out.height = f.height;
  out.rgb.resize(static_cast<std::size_t>(f.width) * f.height * 3);
  if (!f.has_animation) {
    if (!WebPDecodeRGBInto(data, bytes.size(), out.rgb.data(), out.rgb.size(), f.width * 3))
      return broken();
    return out;
  }
  WebPAnimDecoderOptions opt;
  if (!WebPAnimDecoderOptionsInit(&opt))
    return broken();
  opt.color_mode = MODE_RGBA;
  opt.use_threads = 0;
  const WebPData whole{data, bytes.size()};
  std::unique_ptr<WebPAnimDecoder, void (*)(WebPAnimDecoder*)> anim{WebPAnimDecoderNew(&whole, &opt),
                                                                    WebPAnimDecoderDelete};
  WebPAnimInfo info;
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!anim || !WebPAnimDecoderGetInfo(anim.get(), &info) || info.canvas_width != static_cast<uint32_t>(f.width) ||
      info.canvas_height != static_cast<uint32_t>(f.height) || !WebPAnimDecoderGetNext(anim.get(), &rgba, &timestamp))
    return broken();
  const std::size_t pixels = static_cast<std::size_t>(f.width) * f.height;
  for (std::size_t i = 0; i < pixels; ++i)
    std::memcpy(out.rgb.data() + 3 * i, rgba + 4 * i, 3);
  return out;
}

} // namespace

expected<std::vector<uint8_t>, std::string> decode_base64(std::string_view text) {
  // The standard alphabet and the URL-safe one ('-' and '_' for '+' and '/'): they share no other
  // character, so reading both loses nothing. Line breaks and other ASCII white space are skipped,
  // as MIME's base64 (RFC 2045) wraps lines at 76 characters and `base64`, Python's
  // `base64.encodebytes` and many clients send it so.
  static const auto table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i)
      t[static_cast<uint8_t>(a[i])] = static_cast<int8_t>(i);
    t[static_cast<uint8_t>('-')] = 62;
    t[static_cast<uint8_t>('_')] = 63;
    for (char c : {' ', '\t', '\r', '\n', '\f', '\v'})
      t[static_cast<uint8_t>(c)] = -2;
    return t;
  }();
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3 + 3);
  uint32_t acc = 0;
  int bits = 0;
  std::size_t data = 0;
  bool padding = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int8_t v = table[static_cast<uint8_t>(text[i])];
    if (v == -2)
      continue;
    if (text[i] == '=') {
      padding = true;
      continue;
    }
    if (v < 0 || padding)
      return "the base64 data has an invalid character at offset " + std::to_string(i) +
             (padding ? " (data after the '=' padding)" : "");
    ++data;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  if (data % 4 == 1)
    return std::string{"the base64 data has a truncated last group"};
  return out;
}

expected<decoded_image, std::string> decode_image(std::string_view bytes, const image_limits& limits) {
  if (static_cast<int64_t>(bytes.size()) > limits.max_bytes)
    return "the image is " + std::to_string(bytes.size()) + " bytes; at most " + std::to_string(limits.max_bytes) +
           " are accepted";
  if (is_webp(bytes))
    return decode_webp(bytes, limits);
  if (!is_png(bytes) && !is_jpeg(bytes) && !is_gif(bytes))
    return std::string{"unsupported image format: send a "} + formats + " image";
  // stb takes an int length; the byte limit above keeps it in range.
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int len = static_cast<int>(bytes.size());
  if (is_png(bytes))
    if (auto [pw, ph] = png_size(bytes); over_limit(pw, ph, limits))
      return too_many_pixels(pw, ph, limits);
  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(data, len, &w, &h, &comp))
    return stb_refusal();
  if (w <= 0 || h <= 0)
    return std::string{"the image has no pixels"};
  if (over_limit(w, h, limits))
    return too_many_pixels(w, h, limits);
  std::unique_ptr<stbi_uc, void (*)(void*)> px{stbi_load_from_memory(data, len, &w, &h, &comp, 3), stbi_image_free};
  if (!px)
    return stb_refusal();
  decoded_image out;
  out.width = w;
  out.height = h;
  out.rgb.assign(px.get(), px.get() + static_cast<std::size_t>(w) * h * 3);
  return out;
}

decoded_image stretch_to_min_side(decoded_image img, int32_t min_side) {
  if (img.width >= min_side && img.height >= min_side)
    return img;
  if (img.width <= 0 || img.height <= 0)
    return img;
  decoded_image out;
  out.width = std::max(img.width, min_side);
  out.height = std::max(img.height, min_side);
  out.rgb.resize(static_cast<std::size_t>(out.width) * static_cast<std::size_t>(out.height) * 3);
  for (int64_t y = 0; y < out.height; ++y) {
    const int64_t sy = y * img.height / out.height;
    for (int64_t x = 0; x < out.width; ++x) {
      const int64_t sx = x * img.width / out.width;
      const auto* src = img.rgb.data() + (sy * img.width + sx) * 3;
      auto* dst = out.rgb.data() + (y * out.width + x) * 3;
      dst[0] = src[0];
      dst[1] = src[1];
      dst[2] = src[2];
    }
  }
  return out;
}

expected<decoded_image, std::string> decode_data_uri(std::string_view uri, const image_limits& limits) {
  const auto comma = uri.find(";base64,");
  if (uri.rfind("data:image/", 0) != 0 || comma == std::string_view::npos)
    return std::string{"expected a base64 data URI (data:image/png;base64,...)"};
  auto payload = uri.substr(comma + 8);
  // Refuse oversize data before decoding it (base64: 4 characters per 3 bytes).
  if (static_cast<int64_t>(payload.size()) / 4 * 3 > limits.max_bytes + 3)
    return "the image is over " + std::to_string(limits.max_bytes) + " bytes; send a smaller one";
  auto raw = decode_base64(payload);
  if (!raw)
    return std::move(raw).error();
  return decode_image({reinterpret_cast<const char*>(raw->data()), raw->size()}, limits);
}

} // namespace deepinfer::recipe
