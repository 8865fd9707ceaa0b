// Image inputs (issue 21): PNG and JPEG decode to RGB under the manifest's limits; anything else
// is refused with a message that says what to send instead.
#include "recipe/vision/image_decode.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include <stb_image_write.h>

using namespace deepinfer::recipe;

namespace {

std::vector<uint8_t> gradient(int w, int h) {
  std::vector<uint8_t> px(static_cast<std::size_t>(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        px[static_cast<std::size_t>((y * w + x) * 3 + c)] = static_cast<uint8_t>(x * 5 + y * 3 + c * 60);
  return px;
}

void append(void* ctx, void* data, int size) {
  auto* out = static_cast<std::string*>(ctx);
  out->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

std::string png(int w, int h, const std::vector<uint8_t>& px) {
  std::string out;
  BOOST_REQUIRE(stbi_write_png_to_func(append, &out, w, h, 3, px.data(), w * 3));
  return out;
}

std::string jpeg(int w, int h, const std::vector<uint8_t>& px) {
  std::string out;
  BOOST_REQUIRE(stbi_write_jpg_to_func(append, &out, w, h, 3, px.data(), 95));
  return out;
}

std::string base64(const std::string& in) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k)
      out += a[(v >> (6 * k)) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += a[(v >> 18) & 63];
    out += a[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += a[(v >> 18) & 63];
    out += a[(v >> 12) & 63];
    out += a[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(image_decode)

BOOST_AUTO_TEST_CASE(png_decodes_to_its_exact_pixels) {
  const auto px = gradient(37, 21);
  auto img = decode_data_uri("data:image/png;base64," + base64(png(37, 21, px)), image_limits{});
  BOOST_REQUIRE_MESSAGE(img, (img ? "" : img.error()));
  BOOST_TEST(img->width == 37);
  BOOST_TEST(img->height == 21);
  BOOST_TEST((img->rgb == px));
}

BOOST_AUTO_TEST_CASE(jpeg_decodes_to_its_size_and_close_pixels) {
  const auto px = gradient(32, 16);
  auto img = decode_image(jpeg(32, 16, px), image_limits{});
  BOOST_REQUIRE_MESSAGE(img, (img ? "" : img.error()));
  BOOST_TEST(img->width == 32);
  BOOST_TEST(img->height == 16);
  BOOST_REQUIRE_EQUAL(img->rgb.size(), px.size());
  int worst = 0;
  for (std::size_t i = 0; i < px.size(); ++i)
    worst = std::max(worst, std::abs(int(img->rgb[i]) - int(px[i])));
  BOOST_TEST(worst < 40); // lossy, but the same picture
}

BOOST_AUTO_TEST_CASE(corrupt_and_unsupported_images_are_refused_with_what_to_send) {
  auto bytes = png(16, 16, gradient(16, 16));
  auto truncated = decode_image(bytes.substr(0, bytes.size() / 2), image_limits{});
  BOOST_REQUIRE(!truncated);
  BOOST_TEST(truncated.error().find("PNG or JPEG") != std::string::npos);
  auto gif = decode_image("GIF89a\x01\x00\x01\x00", image_limits{});
  BOOST_REQUIRE(!gif);
  BOOST_TEST(gif.error().find("unsupported image format") != std::string::npos);
  auto garbage = decode_data_uri("data:image/png;base64,@@@@", image_limits{});
  BOOST_REQUIRE(!garbage);
  BOOST_TEST(garbage.error().find("invalid character") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(limits_refuse_oversize_images_before_decoding) {
  image_limits lim;
  lim.max_pixels = 64 * 64;
  BOOST_TEST(static_cast<bool>(decode_image(png(64, 64, gradient(64, 64)), lim)));
  auto big = decode_image(png(65, 64, gradient(65, 64)), lim);
  BOOST_REQUIRE(!big);
  BOOST_TEST(big.error().find("65x64") != std::string::npos);
  // A few bytes that declare a huge PNG (stb's own header scan refuses it as an unknown type):
  // the pixel limit's message, with the declared size.
  auto bomb = png(64, 64, gradient(64, 64));
  for (int i = 0; i < 2; ++i) { // IHDR width and height: 30000 each, big-endian
    bomb[16 + 4 * i] = 0;
    bomb[17 + 4 * i] = 0;
    bomb[18 + 4 * i] = static_cast<char>(30000 >> 8);
    bomb[19 + 4 * i] = static_cast<char>(30000 & 0xFF);
  }
  auto bombed = decode_image(bomb, lim);
  BOOST_REQUIRE(!bombed);
  BOOST_TEST(bombed.error().find("30000x30000") != std::string::npos, bombed.error());
  lim.max_bytes = 100;
  auto heavy = decode_image(png(64, 64, gradient(64, 64)), lim);
  BOOST_REQUIRE(!heavy);
  BOOST_TEST(heavy.error().find("bytes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(base64_round_trips_every_padding) {
  for (const std::string& s : {std::string{}, std::string{"a"}, std::string{"ab"}, std::string{"abc"},
                               std::string{"abcd"}, std::string("\xff\x00\x10", 3)}) {
    auto d = decode_base64(base64(s));
    BOOST_REQUIRE(d);
    BOOST_TEST((std::string(d->begin(), d->end()) == s));
  }
}

BOOST_AUTO_TEST_SUITE_END()
