// The vision encoder (issue 21): shapes, the same bits on every ISA, and image embeddings that
// really reach the prompt: they change the logits, the same image gives the same logits however
// the prefill is chunked, and another image gives other logits.
#include <cmath>
#include <cstring>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"
#include "engine/testing/random_pixels.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

std::vector<uint8_t> picture(int w, int h, uint32_t seed) {
  return random_pixels(w, h, seed);
}

/// A prompt of `n` tokens whose positions [at, at + tokens) hold the image placeholder.
std::vector<int32_t> prompt_with_image(int64_t n, int64_t at, int64_t tokens) {
  auto p = random_tokens(n, 5);
  for (int64_t i = at; i < at + tokens; ++i)
    p[static_cast<std::size_t>(i)] = 129264;
  return p;
}

std::vector<float> last_logits(rank_engine& e, const std::vector<int32_t>& prompt,
                               std::vector<image_embedding> images, int64_t chunk = 0) {
  prefill_request req;
  req.seq = next_seq();
  req.tokens = prompt;
  req.images = std::move(images);
  req.sampling.max_tokens = 4;
  std::vector<float> out;
  if (chunk == 0) {
    auto p = e.prefill(req);
    BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
    out = p.logits;
  } else {
    auto b = e.begin_prefill(req);
    BOOST_REQUIRE_MESSAGE(b.status == engine_status::ok, b.error);
    for (;;) {
      auto p = e.prefill_step(req.seq, chunk);
      BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
      if (p.done) {
        out = p.logits;
        break;
      }
    }
  }
  e.free(req.seq);
  return out;
}

image_embedding embed(rank_engine& e, int w, int h, const std::vector<uint8_t>& px, int64_t at) {
  image_embedding im;
  im.position = at;
  im.tokens = e.vision()->tokens_for(w, h);
  im.values = e.encode_image({w, h, px});
  return im;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(vision_encoder_suite)

BOOST_AUTO_TEST_CASE(an_image_gives_one_embedding_per_cell) {
  auto& e = tiny_engine();
  BOOST_REQUIRE(e.has_vision());
  const auto& vc = e.model().vision;
  const int cell = vc.cell();
  // 3 x 2 whole cells plus a ragged edge the encoder crops.
  const int w = 3 * cell + 5, h = 2 * cell + cell / 2;
  BOOST_TEST(e.vision()->tokens_for(w, h) == 6);
  BOOST_TEST(e.vision()->patches_for(w, h) == 6 * vc.merge * vc.merge);
  BOOST_TEST(e.vision()->tokens_for(cell - 1, 4 * cell) == 0);
  const auto v = e.encode_image({w, h, picture(w, h, 1)});
  BOOST_REQUIRE_EQUAL(v.size(), static_cast<std::size_t>(6 * e.model().hidden));
  for (float x : v)
    BOOST_REQUIRE(std::isfinite(x));
  // The ragged edge is cropped: pixels there change nothing.
  auto px = picture(w, h, 1);
  px[static_cast<std::size_t>((w - 1) * 3)] ^= 0xff;
  BOOST_TEST(same_bits(e.encode_image({w, h, px}), v));
  // A pixel inside a cell changes the embeddings.
  px[0] ^= 0xff;
  BOOST_TEST(!same_bits(e.encode_image({w, h, px}), v));
}

BOOST_AUTO_TEST_CASE(every_isa_gives_the_same_embeddings_and_logits) {
  const int cell = tiny_engine().model().vision.cell();
  const int w = 4 * cell, h = 3 * cell;
  const auto px = picture(w, h, 9);
  std::vector<float> first_embed, first_logits;
  for (auto isa : kernels::supported_cpu_isas()) {
    auto loaded = rank_engine::load(tiny_model_dir(), rank_engine::config{8, 2, isa});
    BOOST_REQUIRE_MESSAGE(loaded.engine, loaded.error);
    auto& e = *loaded.engine;
    auto im = embed(e, w, h, px, 40);
    const auto prompt = prompt_with_image(200, 40, im.tokens);
    auto emb = im.values;
    auto lg = last_logits(e, prompt, {std::move(im)});
    if (first_embed.empty()) {
      first_embed = std::move(emb);
      first_logits = std::move(lg);
      continue;
    }
    BOOST_TEST(same_bits(emb, first_embed), kernels::to_string(isa) << " embeddings");
    BOOST_TEST(same_bits(lg, first_logits), kernels::to_string(isa) << " logits");
  }
}

BOOST_AUTO_TEST_CASE(image_embeddings_reach_the_prompt_whatever_the_chunking) {
  auto& e = tiny_engine();
  const int cell = e.model().vision.cell();
  const int w = 4 * cell, h = 4 * cell; // 16 placeholders
  const auto a = picture(w, h, 1), b = picture(w, h, 2);
  const int64_t at = 120; // spans the chunk boundaries below
  const auto ia = embed(e, w, h, a, at);
  const auto prompt = prompt_with_image(300, at, ia.tokens);
  const auto whole = last_logits(e, prompt, {ia});
  BOOST_TEST(same_bits(last_logits(e, prompt, {ia}, 128), whole));
  BOOST_TEST(same_bits(last_logits(e, prompt, {ia}, 7), whole));
  // Without the embeddings the placeholders are plain tokens: other logits.
  BOOST_TEST(!same_bits(last_logits(e, prompt, {}), whole));
  // Another picture: other logits.
  BOOST_TEST(!same_bits(last_logits(e, prompt, {embed(e, w, h, b, at)}), whole));
}

BOOST_AUTO_TEST_CASE(misplaced_embeddings_are_refused) {
  auto& e = tiny_engine();
  const int cell = e.model().vision.cell();
  auto im = embed(e, cell, cell, picture(cell, cell, 3), 10);
  prefill_request req;
  req.seq = next_seq();
  req.tokens = prompt_with_image(20, 10, 1);
  auto past = im;
  past.position = 19 + 1;
  req.images = {past};
  BOOST_TEST((e.begin_prefill(req).status == engine_status::invalid_request));
  auto short_values = im;
  short_values.values.pop_back();
  req.images = {short_values};
  BOOST_TEST((e.begin_prefill(req).status == engine_status::invalid_request));
  req.images = {im, im}; // overlapping
  BOOST_TEST((e.begin_prefill(req).status == engine_status::invalid_request));
  req.images = {im};
  BOOST_TEST((e.begin_prefill(req).status == engine_status::ok));
  e.free(req.seq);
}

BOOST_AUTO_TEST_SUITE_END()
