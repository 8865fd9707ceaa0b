// Bounded decoder mode (the serving default, DESIGN §5.2) with a request resubmitted after its
// decode rank died: prompt + the tokens it generated, prefilled again with a hit from the
// prompt's snapshot and the decoder anchored at the prompt's last 128 tokens, continues with the
// very logits the lost decode steps had. Without the anchor it would not.
#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

BOOST_AUTO_TEST_SUITE(bounded_mode)

BOOST_AUTO_TEST_CASE(a_resubmission_anchored_at_its_prompt_continues_the_same_logits) {
  auto& e = tiny_engine();
  const int64_t len = 700, steps = 24, done = 10;
  const auto prompt = random_tokens(len, 57);
  // 1. The first attempt: bounded prefill, then decode steps (each step's logits kept).
  prefill_request first;
  first.seq = next_seq();
  first.tokens = prompt;
  first.sampling.max_tokens = 1 << 20;
  auto p = e.prefill(first);
  BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
  std::vector<int32_t> generated{p.first.id};
  std::vector<std::vector<float>> step_logits;
  const std::vector<sequence_id> batch{first.seq};
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<float> lg;
    auto d = e.decode_step(batch, &lg);
    BOOST_REQUIRE(d[0].status == engine_status::ok);
    generated.push_back(d[0].token.id);
    step_logits.push_back(std::move(lg));
  }
  // The snapshot a retry of the prompt hits: at align_down(L - ring, 128).
  const int64_t hit = (len - 134) / 128 * 128;
  std::optional<std::vector<std::byte>> snap;
  for (auto& s : e.export_snapshots(first.seq))
    if (s.end == hit)
      snap = s.bytes;
  BOOST_REQUIRE(snap.has_value());
  // 2. The resubmission after `done` generated tokens: prompt + them, hit on the prompt's blocks.
  auto resubmit = [&](int64_t decoder_from) {
    prefill_request req;
    req.seq = next_seq();
    req.tokens = prompt;
    req.tokens.insert(req.tokens.end(), generated.begin(), generated.begin() + done);
    req.sampling.max_tokens = 1 << 20;
    req.hit_length = hit;
    req.snapshot = snap;
    req.decoder_from = decoder_from;
    for (int64_t b = 0; b < hit / 128; ++b)
      req.hit_blocks.push_back(*e.export_block(first.seq, b));
    auto r = e.prefill(req);
    BOOST_REQUIRE_MESSAGE(r.status == engine_status::ok, r.error);
    return std::pair{req.seq, r};
  };
  auto [again, r] = resubmit(len - 128);
  // The prefill's last row is position len + done - 1: the input of decode step done - 1.
  BOOST_TEST(max_abs_diff(r.logits, step_logits[static_cast<std::size_t>(done - 1)]) == 0.0f);
  BOOST_TEST(r.first.id == generated[static_cast<std::size_t>(done)]);
  const std::vector<sequence_id> batch2{again};
  for (int64_t s = done; s < steps; ++s) {
    std::vector<float> lg;
    auto d = e.decode_step(batch2, &lg);
    BOOST_REQUIRE(d[0].status == engine_status::ok);
    BOOST_TEST(max_abs_diff(lg, step_logits[static_cast<std::size_t>(s)]) == 0.0f, "step " << s);
  }
  // Unanchored, the decoder would start over at the new last 128 tokens: other logits.
  auto [loose, lr] = resubmit(-1);
  BOOST_TEST(max_abs_diff(lr.logits, step_logits[static_cast<std::size_t>(done - 1)]) > 0.0f);
  for (auto s : {first.seq, again, loose})
    e.free(s);
}

BOOST_AUTO_TEST_CASE(a_decoder_anchor_past_the_prompt_is_refused) {
  auto& e = tiny_engine();
  prefill_request req;
  req.seq = next_seq();
  req.tokens = random_tokens(200, 3);
  req.decoder_from = 200;
  auto p = e.begin_prefill(req);
  BOOST_TEST((p.status == engine_status::invalid_request));
}

BOOST_AUTO_TEST_SUITE_END()
