#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "recipe/base/expected.hpp"

namespace deepinfer::recipe {

/// What an image may be (manifest `[vision]`, issue 21).
struct image_limits {
  /// Width x height of one decoded image, at most.
  int64_t max_pixels = 1 << 20;
  /// Images in one request, at most.
  int32_t max_images_per_request = 8;
  /// Encoded bytes of one image (after base64), at most: refused before anything is decoded.
  int64_t max_bytes = 16 << 20;
};

/// A decoded image: 8-bit RGB, row-major.
struct decoded_image {
  int32_t width = 0;
  int32_t height = 0;
  std::vector<uint8_t> rgb;
};

/// Decodes standard base64 (padding optional, no whitespace); an error message otherwise.
expected<std::vector<uint8_t>, std::string> decode_base64(std::string_view text);

/// Decodes a PNG, JPEG or GIF (stb_image) or WebP (libwebp) file to RGB under `limits`: the format
/// is checked by its signature and the size from its header before any pixel is decoded. An
/// animated GIF or WebP gives its first frame, and alpha is dropped. The error says what is wrong
/// and what would be accepted.
expected<decoded_image, std::string> decode_image(std::string_view bytes, const image_limits& limits);

/// The image with each side shorter than `min_side` stretched to `min_side` (nearest neighbour:
/// integer arithmetic, so the same pixels, and the same prefix-cache key, on every machine); the
/// image itself when both sides are long enough. A vision encoder reads whole cells, and an icon
/// or a thin banner under one cell is still an image a client may send (OpenAI and Anthropic
/// take them).
decoded_image stretch_to_min_side(decoded_image img, int32_t min_side);

/// Decodes a `data:image/...;base64,...` URI (the protocol parsers checked its form): base64,
/// then `decode_image`.
expected<decoded_image, std::string> decode_data_uri(std::string_view uri, const image_limits& limits);

} // namespace deepinfer::recipe
