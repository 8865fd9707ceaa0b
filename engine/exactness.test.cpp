// Exact mode equals recomputation from scratch; chunking and batching change no bit.
#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

BOOST_AUTO_TEST_SUITE(exactness)

BOOST_AUTO_TEST_CASE(prefill_plus_decode_equals_recompute_from_scratch_at_every_step) {
  auto& e = tiny_engine();
  for (int64_t len : {1, 127, 128, 129, 1021, 5000}) { // 1021: decode crosses an indexer tile
    const int steps = len >= 5000 ? 2 : 4;
    auto prompt = random_tokens(len, 11 + static_cast<uint64_t>(len));
    auto [seq, logits] = prefill_fresh(prompt, decoder_mode::exact);
    float worst = 0.0f;
    for (int step = 0; step <= steps; ++step) {
      auto toks = e.tokens(seq);
      toks.pop_back(); // the last token is not fed yet: `logits` predict it
      auto [ref, ref_logits] = prefill_fresh(toks, decoder_mode::exact);
      worst = std::max(worst, max_abs_diff(logits, ref_logits));
      if (len <= 1021) {
        // The exact window shortcut against a decoder run over every position.
        auto [full, full_logits] = prefill_fresh(toks, decoder_mode::full);
        worst = std::max(worst, max_abs_diff(logits, full_logits));
        e.free(full);
      }
      e.free(ref);
      if (step == steps)
        break;
      std::vector<sequence_id> one{seq};
      auto out = e.decode_step(one, &logits);
      BOOST_REQUIRE(out[0].status == engine_status::ok);
    }
    BOOST_TEST_MESSAGE("L=" << len << " steps=" << steps << " max_abs_logit_diff=" << worst);
    BOOST_TEST(worst < 1e-4f, "L=" << len << " diff " << worst);
    e.free(seq);
  }
}

BOOST_AUTO_TEST_CASE(every_chunking_equals_no_chunking) {
  auto& e = tiny_engine();
  auto prompt = random_tokens(700, 5);
  for (auto mode : {decoder_mode::bounded, decoder_mode::exact}) {
    auto [whole, whole_logits] = prefill_fresh(prompt, mode);
    for (int64_t chunk : {7, 37, 100, 128, 129, 640}) {
      auto [seq, logits] = prefill_fresh(prompt, mode, chunk);
      BOOST_TEST(max_abs_diff(logits, whole_logits) == 0.0f, "chunk " << chunk);
      for (int64_t b = 0; b < 5; ++b)
        BOOST_TEST((*e.export_block(seq, b) == *e.export_block(whole, b)), "block " << b);
      BOOST_TEST((*e.export_snapshot(seq) == *e.export_snapshot(whole)));
      std::vector<sequence_id> a{seq}, w{whole};
      std::vector<float> la, lw;
      e.decode_step(a, &la);
      e.decode_step(w, &lw);
      BOOST_TEST(max_abs_diff(la, lw) == 0.0f);
      e.free(seq);
      e.free(whole);
      auto again = prefill_fresh(prompt, mode);
      whole = again.first;
    }
    e.free(whole);
  }
}

BOOST_AUTO_TEST_CASE(batch_of_eight_different_lengths_equals_each_alone) {
  auto& e = tiny_engine();
  const std::vector<int64_t> lens{1, 50, 127, 128, 129, 300, 640, 1000};
  std::vector<sequence_id> batch, alone;
  for (std::size_t i = 0; i < lens.size(); ++i) {
    auto prompt = random_tokens(lens[i], 100 + i);
    batch.push_back(prefill_fresh(prompt, decoder_mode::bounded).first);
    alone.push_back(prefill_fresh(prompt, decoder_mode::bounded).first);
  }
  const int64_t vocab = e.model().vocab_size;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> lb;
    auto out = e.decode_step(batch, &lb);
    for (std::size_t i = 0; i < lens.size(); ++i) {
      std::vector<sequence_id> one{alone[i]};
      std::vector<float> la;
      auto o = e.decode_step(one, &la);
      std::vector<float> row(lb.begin() + static_cast<int64_t>(i) * vocab,
                             lb.begin() + static_cast<int64_t>(i + 1) * vocab);
      BOOST_TEST(max_abs_diff(row, la) == 0.0f, "sequence " << i << " step " << step);
      BOOST_TEST(o[0].token.id == out[i].token.id);
    }
  }
  for (auto s : batch)
    e.free(s);
  for (auto s : alone)
    e.free(s);
}

BOOST_AUTO_TEST_SUITE_END()
