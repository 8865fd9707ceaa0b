// The prefix-cache key covers the image (issue 21): the hash chain mixes each image's content key
// in at the block of its first placeholder, so equal images at equal places key alike and any
// other image (or the same image elsewhere) changes that block's key and every later one.
#include "kv/hash_chain.hpp"

#include <boost/test/unit_test.hpp>

#include <numeric>
#include <vector>

using namespace deepinfer::kv;

namespace {

std::vector<token_id> prompt(std::size_t n) {
  std::vector<token_id> out(n);
  std::iota(out.begin(), out.end(), 500);
  return out;
}

std::vector<uint8_t> pixels(int w, int h, uint8_t seed) {
  std::vector<uint8_t> px(static_cast<std::size_t>(w * h * 3));
  for (std::size_t i = 0; i < px.size(); ++i)
    px[i] = static_cast<uint8_t>(i * 7 + seed);
  return px;
}

} // namespace

BOOST_AUTO_TEST_SUITE(image_marks)

BOOST_AUTO_TEST_CASE(content_key_depends_on_pixels_and_size) {
  auto a = pixels(4, 4, 1), b = pixels(4, 4, 2);
  BOOST_TEST((image_content_key(4, 4, a) == image_content_key(4, 4, a)));
  BOOST_TEST((image_content_key(4, 4, a) != image_content_key(4, 4, b)));
  // The same bytes read as another shape are another image.
  BOOST_TEST((image_content_key(4, 4, a) != image_content_key(2, 8, a)));
}

BOOST_AUTO_TEST_CASE(same_image_at_same_place_keys_alike_and_another_image_never_does) {
  const hash_chain chain{model_fingerprint::of("m")};
  const auto toks = prompt(600);
  const auto ka = image_content_key(4, 4, pixels(4, 4, 1));
  const auto kb = image_content_key(4, 4, pixels(4, 4, 2));
  const std::vector<image_mark> a{{200, 4, ka}}, a_again{{200, 4, ka}}, b{{200, 4, kb}}, a_moved{{330, 4, ka}};
  const auto text = chain.keys(toks);
  const auto with_a = chain.with_images(a).keys(toks);
  BOOST_REQUIRE_EQUAL(with_a.size(), 4u);
  BOOST_TEST((with_a == chain.with_images(a_again).keys(toks)));
  // Block 0 ends before the image: shared with the text-only chain and with other images.
  BOOST_TEST((with_a[0] == text[0]));
  const auto with_b = chain.with_images(b).keys(toks);
  BOOST_TEST((with_b[0] == with_a[0]));
  for (std::size_t i = 1; i < with_a.size(); ++i) {
    BOOST_TEST((with_a[i] != text[i]), "block " << i);
    BOOST_TEST((with_a[i] != with_b[i]), "block " << i);
  }
  // The same image two blocks later is another prompt from block 1 on.
  const auto moved = chain.with_images(a_moved).keys(toks);
  BOOST_TEST((moved[1] == text[1]));
  BOOST_TEST((moved[2] != with_a[2]));
}

BOOST_AUTO_TEST_CASE(salted_chains_keep_their_images) {
  const hash_chain chain{model_fingerprint::of("m")};
  const auto toks = prompt(300);
  const std::vector<image_mark> a{{10, 4, image_content_key(4, 4, pixels(4, 4, 1))}};
  const auto salt = cache_salt::of("tenant");
  const auto x = chain.with_images(a).salted(salt).keys(toks);
  const auto y = chain.salted(salt).with_images(a).keys(toks);
  BOOST_TEST((x == y));
  BOOST_TEST((x != chain.salted(salt).keys(toks)));
}

BOOST_AUTO_TEST_SUITE_END()
