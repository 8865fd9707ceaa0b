// Image inputs (issue 21): PNG, JPEG, GIF and WebP decode to RGB under the manifest's limits;
// anything else is refused with a message that says what to send instead.
#include "recipe/vision/image_decode.hpp"
#include "recipe/vision/test_images.hpp"

#include <boost/test/unit_test.hpp>

#include <array>
#include <random>
#include <string>
#include <vector>

#include <stb_image_write.h>
#include <webp/encode.h>
#include <webp/mux.h>

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
  auto out = test::png_file(w, h, px);
  BOOST_REQUIRE(!out.empty());
  return out;
}

std::string jpeg(int w, int h, const std::vector<uint8_t>& px) {
  std::string out;
  BOOST_REQUIRE(stbi_write_jpg_to_func(append, &out, w, h, 3, px.data(), 95));
  return out;
}

/// A GIF of `frames` (palette indices, w x h each) over one 256-colour palette, every LZW code
/// a literal (a clear code every 100, so codes stay 9 bits wide): what the decoder sees is a
/// valid file, whatever an encoder would have compressed.
std::string gif(int w, int h, const std::vector<std::vector<uint8_t>>& frames, const std::array<uint8_t, 768>& palette) {
  std::string out = "GIF89a";
  auto le16 = [&](int v) {
    out += static_cast<char>(v & 0xFF);
    out += static_cast<char>(v >> 8);
  };
  le16(w);
  le16(h);
  out += '\xF7'; // a global table of 256 colours
  out += '\0';
  out += '\0';
  out.append(reinterpret_cast<const char*>(palette.data()), palette.size());
  for (const auto& idx : frames) {
    out += "\x21\xF9\x04\x04\x0A";   // graphic control: keep the frame, 0.1 s
    out += std::string("\0\0\0", 3); // no transparency
    out += '\x2C';
    le16(0);
    le16(0);
    le16(w);
    le16(h);
    out += '\0';
    out += '\x08'; // LZW minimum code size
    std::string lzw;
    uint32_t acc = 0;
    int bits = 0;
    auto code = [&](uint32_t c) {
      acc |= c << bits;
      for (bits += 9; bits >= 8; bits -= 8, acc >>= 8)
        lzw += static_cast<char>(acc & 0xFF);
    };
    for (std::size_t i = 0; i < idx.size(); ++i) {
      if (i % 100 == 0)
        code(256);
      code(idx[i]);
    }
    code(257);
    if (bits > 0)
      lzw += static_cast<char>(acc & 0xFF);
    for (std::size_t at = 0; at < lzw.size(); at += 255) {
      const auto n = std::min<std::size_t>(255, lzw.size() - at);
      out += static_cast<char>(n);
      out += lzw.substr(at, n);
    }
    out += '\0';
  }
  out += '\x3B';
  return out;
}

std::string webp(int w, int h, const std::vector<uint8_t>& px, bool lossless) {
  uint8_t* data = nullptr;
  const std::size_t n = lossless ? WebPEncodeLosslessRGB(px.data(), w, h, w * 3, &data)
                                 : WebPEncodeRGB(px.data(), w, h, w * 3, 90.0f, &data);
  BOOST_REQUIRE(n > 0);
  std::string out(reinterpret_cast<const char*>(data), n);
  WebPFree(data);
  return out;
}

/// An animated lossless WebP of the given frames (libwebpmux's encoder).
std::string animated_webp(int w, int h, const std::vector<std::vector<uint8_t>>& frames) {
  WebPAnimEncoderOptions eo;
  BOOST_REQUIRE(WebPAnimEncoderOptionsInit(&eo));
  WebPAnimEncoder* enc = WebPAnimEncoderNew(w, h, &eo);
  BOOST_REQUIRE(enc);
  WebPConfig cfg;
  BOOST_REQUIRE(WebPConfigInit(&cfg));
  cfg.lossless = 1;
  int t = 0;
  for (const auto& px : frames) {
    WebPPicture pic;
    BOOST_REQUIRE(WebPPictureInit(&pic));
    pic.width = w;
    pic.height = h;
    pic.use_argb = 1;
    BOOST_REQUIRE(WebPPictureImportRGB(&pic, px.data(), w * 3));
    BOOST_REQUIRE(WebPAnimEncoderAdd(enc, &pic, t, &cfg));
    WebPPictureFree(&pic);
    t += 100;
  }
  BOOST_REQUIRE(WebPAnimEncoderAdd(enc, nullptr, t, nullptr));
  WebPData data;
  WebPDataInit(&data);
  BOOST_REQUIRE(WebPAnimEncoderAssemble(enc, &data));
  std::string out(reinterpret_cast<const char*>(data.bytes), data.size);
  WebPDataClear(&data);
  WebPAnimEncoderDelete(enc);
  return out;
}

std::array<uint8_t, 768> test_palette() {
  std::array<uint8_t, 768> p{};
  for (int i = 0; i < 256; ++i) {
    p[static_cast<std::size_t>(3 * i)] = static_cast<uint8_t>(i);
    p[static_cast<std::size_t>(3 * i + 1)] = static_cast<uint8_t>(255 - i);
    p[static_cast<std::size_t>(3 * i + 2)] = static_cast<uint8_t>(i * 37);
  }
  return p;
}

std::vector<uint8_t> indices(int w, int h, int seed) {
  std::vector<uint8_t> idx(static_cast<std::size_t>(w * h));
  for (std::size_t i = 0; i < idx.size(); ++i)
    idx[i] = static_cast<uint8_t>(i * 7 + seed * 31 + i / static_cast<std::size_t>(w) * 13);
  return idx;
}

std::vector<uint8_t> rgb_of(const std::vector<uint8_t>& idx, const std::array<uint8_t, 768>& pal) {
  std::vector<uint8_t> px;
  for (auto i : idx)
    px.insert(px.end(), pal.begin() + 3 * i, pal.begin() + 3 * i + 3);
  return px;
}

using test::base64;

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

BOOST_AUTO_TEST_CASE(gif_decodes_its_first_frame_to_its_palette_colours) {
  const auto pal = test_palette();
  const auto first = indices(45, 23, 1), second = indices(45, 23, 2);
  using frames_t = std::vector<std::vector<uint8_t>>;
  for (const auto& frames : {frames_t{first}, frames_t{first, second}}) {
    auto img = decode_data_uri("data:image/gif;base64," + base64(gif(45, 23, frames, pal)), image_limits{});
    BOOST_REQUIRE_MESSAGE(img, (img ? "" : img.error()));
    BOOST_TEST(img->width == 45);
    BOOST_TEST(img->height == 23);
    BOOST_TEST((img->rgb == rgb_of(first, pal)), frames.size() << " frame(s)");
  }
}

BOOST_AUTO_TEST_CASE(webp_lossless_lossy_and_animated_decode) {
  const auto px = gradient(37, 21);
  auto exact = decode_data_uri("data:image/webp;base64," + base64(webp(37, 21, px, true)), image_limits{});
  BOOST_REQUIRE_MESSAGE(exact, (exact ? "" : exact.error()));
  BOOST_TEST(exact->width == 37);
  BOOST_TEST(exact->height == 21);
  BOOST_TEST((exact->rgb == px));
  auto lossy = decode_image(webp(37, 21, px, false), image_limits{});
  BOOST_REQUIRE_MESSAGE(lossy, (lossy ? "" : lossy.error()));
  BOOST_REQUIRE_EQUAL(lossy->rgb.size(), px.size());
  // Lossy WebP halves the colour resolution and the gradient wraps around every few pixels: the
  // mean error, not the worst, says it is the same picture.
  double error = 0;
  for (std::size_t i = 0; i < px.size(); ++i)
    error += std::abs(int(lossy->rgb[i]) - int(px[i]));
  BOOST_TEST(error / static_cast<double>(px.size()) < 16.0);
  // An animated file: its first frame, exactly (the second differs everywhere).
  auto other = px;
  for (auto& b : other)
    b = static_cast<uint8_t>(255 - b);
  auto anim = decode_image(animated_webp(37, 21, {px, other}), image_limits{});
  BOOST_REQUIRE_MESSAGE(anim, (anim ? "" : anim.error()));
  BOOST_TEST(anim->width == 37);
  BOOST_TEST((anim->rgb == px));
}

BOOST_AUTO_TEST_CASE(damaged_files_of_every_format_give_an_image_or_an_error) {
  // Seeded damage (flipped bytes, a cut, a byte run) to a file of each format: every result
  // is a consistent image or a message, never a crash or a read past the bytes given.
  const auto px = gradient(40, 24);
  const auto pal = test_palette();
  const std::vector<std::string> files = {png(40, 24, px), jpeg(40, 24, px), gif(40, 24, {indices(40, 24, 3), indices(40, 24, 4)}, pal),
                                          webp(40, 24, px, true), webp(40, 24, px, false), animated_webp(40, 24, {px, gradient(40, 24)})};
  std::mt19937 rng(20261206);
  image_limits lim;
  lim.max_pixels = 1 << 16;
  int decoded = 0, refused = 0;
  for (const auto& file : files)
    for (int round = 0; round < 300; ++round) {
      std::string bytes = file;
      const auto at = [&] { return static_cast<std::size_t>(rng() % bytes.size()); };
      switch (round % 3) {
      case 0:
        for (unsigned k = 0; k < 1 + rng() % 8; ++k)
          bytes[at()] = static_cast<char>(rng());
        break;
      case 1:
        bytes.resize(at());
        break;
      default:
        bytes.replace(at(), rng() % 16, std::string(rng() % 64, static_cast<char>(rng())));
      }
      // The decoder gets exactly these bytes: a copy on the heap of that size, so a read past
      // them is a read past an allocation.
      auto img = decode_image(std::string_view(bytes), lim);
      if (img) {
        ++decoded;
        BOOST_REQUIRE_EQUAL(img->rgb.size(), static_cast<std::size_t>(img->width) * img->height * 3);
        BOOST_REQUIRE(int64_t{img->width} * img->height <= lim.max_pixels);
      } else {
        ++refused;
        BOOST_REQUIRE(!img.error().empty());
      }
    }
  BOOST_TEST_MESSAGE(decoded << " damaged files decoded, " << refused << " refused");
  BOOST_TEST(refused > 0);
}

BOOST_AUTO_TEST_CASE(corrupt_and_unsupported_images_are_refused_with_what_to_send) {
  auto bytes = png(16, 16, gradient(16, 16));
  auto truncated = decode_image(bytes.substr(0, bytes.size() / 2), image_limits{});
  BOOST_REQUIRE(!truncated);
  BOOST_TEST(truncated.error().find("PNG, JPEG, GIF or WebP") != std::string::npos);
  auto bmp = decode_image("BM\x36\x00\x00\x00\x00\x00\x00\x00\x36\x00", image_limits{});
  BOOST_REQUIRE(!bmp);
  BOOST_TEST(bmp.error().find("unsupported image format: send a PNG, JPEG, GIF or WebP image") != std::string::npos);
  auto header_only_gif = decode_image(std::string("GIF89a\x01\x00\x01\x00\x00\x00\x00", 13), image_limits{});
  BOOST_REQUIRE(!header_only_gif);
  BOOST_TEST(header_only_gif.error().find("cannot be decoded") != std::string::npos, header_only_gif.error());
  const auto w = webp(16, 16, gradient(16, 16), false);
  auto cut_webp = decode_image(w.substr(0, w.size() - 20), image_limits{});
  BOOST_REQUIRE(!cut_webp);
  BOOST_TEST(cut_webp.error().find("WebP") != std::string::npos, cut_webp.error());
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
  // Sides near 2^32 (a PNG declares each in 32 bits): their product is over int64's range, so
  // the check compares without multiplying.
  for (int i = 0; i < 2; ++i) { // 4,000,000,000 = 0xEE6B2800
    bomb[16 + 4 * i] = static_cast<char>(0xEE);
    bomb[17 + 4 * i] = static_cast<char>(0x6B);
    bomb[18 + 4 * i] = static_cast<char>(0x28);
    bomb[19 + 4 * i] = static_cast<char>(0x00);
  }
  auto huge = decode_image(bomb, lim);
  BOOST_REQUIRE(!huge);
  BOOST_TEST(huge.error().find("4000000000x4000000000") != std::string::npos, huge.error());
  // The same limit from GIF and WebP headers (a GIF that declares 30000 x 30000 in a few bytes).
  auto big_webp = decode_image(webp(65, 64, gradient(65, 64), true), lim);
  BOOST_REQUIRE(!big_webp);
  BOOST_TEST(big_webp.error().find("65x64") != std::string::npos, big_webp.error());
  auto gif_bomb = gif(64, 64, {indices(64, 64, 1)}, test_palette());
  for (int i = 0; i < 2; ++i) { // logical screen width and height, little-endian
    gif_bomb[6 + 2 * i] = static_cast<char>(30000 & 0xFF);
    gif_bomb[7 + 2 * i] = static_cast<char>(30000 >> 8);
  }
  auto gif_bombed = decode_image(gif_bomb, lim);
  BOOST_REQUIRE(!gif_bombed);
  BOOST_TEST(gif_bombed.error().find("30000x30000") != std::string::npos, gif_bombed.error());
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

// Sides under the minimum are stretched to it by nearest neighbour; the rest is kept as it is.
BOOST_AUTO_TEST_CASE(sides_under_one_cell_are_stretched_to_it) {
  decoded_image img;
  img.width = 3;
  img.height = 2;
  for (int i = 0; i < 3 * 2 * 3; ++i)
    img.rgb.push_back(static_cast<uint8_t>(i * 10));
  auto at = [](const decoded_image& d, int x, int y, int c) { return d.rgb[static_cast<std::size_t>((y * d.width + x) * 3 + c)]; };
  const auto s = stretch_to_min_side(img, 32);
  BOOST_REQUIRE(s.width == 32);
  BOOST_REQUIRE(s.height == 32);
  BOOST_REQUIRE(s.rgb.size() == 32u * 32u * 3u);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c)
        BOOST_TEST(at(s, x, y, c) == at(img, x * 3 / 32, y * 2 / 32, c));
  BOOST_TEST(at(s, 31, 31, 2) == at(img, 2, 1, 2)); // the last source pixel reaches the corner
  // One side long enough: only the other is stretched.
  decoded_image wide;
  wide.width = 40;
  wide.height = 1;
  wide.rgb.assign(40 * 3, 0);
  for (int x = 0; x < 40; ++x)
    wide.rgb[static_cast<std::size_t>(x * 3)] = static_cast<uint8_t>(x);
  const auto w = stretch_to_min_side(wide, 32);
  BOOST_REQUIRE(w.width == 40);
  BOOST_REQUIRE(w.height == 32);
  for (int y = 0; y < 32; ++y)
    BOOST_TEST(at(w, 17, y, 0) == 17);
  // Both sides long enough: the same image.
  const auto big = decode_image(png(37, 33, gradient(37, 33)), image_limits{});
  BOOST_REQUIRE(big);
  const auto same = stretch_to_min_side(*big, 32);
  BOOST_TEST(same.width == 37);
  BOOST_TEST(same.height == 33);
  BOOST_TEST((same.rgb == big->rgb));
}

// MIME's base64 (lines of 76 characters, as `base64` and Python's `base64.encodebytes` write it)
// and the URL-safe alphabet decode to the same bytes; what is not base64 is still refused.
BOOST_AUTO_TEST_CASE(base64_with_line_breaks_or_the_url_safe_alphabet) {
  std::string bytes;
  for (int i = 0; i < 300; ++i)
    bytes.push_back(static_cast<char>((i * 37 + 11) & 0xFF));
  const std::string plain = base64(bytes);
  std::string wrapped, url_safe = plain;
  for (std::size_t i = 0; i < plain.size(); i += 76)
    wrapped += plain.substr(i, 76) + (i % 152 == 0 ? "\r\n" : "\n");
  for (auto& c : url_safe)
    c = c == '+' ? '-' : c == '/' ? '_' : c;
  BOOST_TEST(url_safe != plain); // the data has both characters the alphabets differ in
  for (const auto& text : {plain, wrapped, url_safe, " " + plain + "\n\t"}) {
    auto d = decode_base64(text);
    BOOST_REQUIRE_MESSAGE(d, (d ? std::string{} : d.error()));
    BOOST_TEST((std::string(d->begin(), d->end()) == bytes));
  }
  auto after_padding = decode_base64("YQ==YQ==");
  BOOST_REQUIRE(!after_padding);
  BOOST_TEST(after_padding.error().find("after the '=' padding") != std::string::npos, after_padding.error());
  BOOST_TEST(!decode_base64("YWJjZ"));   // a truncated last group
  BOOST_TEST(!decode_base64("YW\nJj*")); // not base64
  // A wrapped image decodes as the image does.
  const auto file = png(37, 21, gradient(37, 21));
  std::string wrapped_file;
  const auto b = base64(file);
  for (std::size_t i = 0; i < b.size(); i += 76)
    wrapped_file += b.substr(i, 76) + "\n";
  auto img = decode_data_uri("data:image/png;base64," + wrapped_file, image_limits{});
  BOOST_REQUIRE_MESSAGE(img, (img ? std::string{} : img.error()));
  BOOST_TEST(img->width == 37);
}

BOOST_AUTO_TEST_SUITE_END()
