// Exact mode with prefix hits: a hit with a snapshot (encoder and decoder windows) changes no
// bit of the greedy output, whether the snapshot came from a prefill or from decode (after the
// sequence moved to another rank).
#include <boost/test/unit_test.hpp>

#include "engine/prefill_scheduler.hpp"
#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

/// The greedy continuation of `seq` for `steps` tokens, and every step's logits.
std::pair<std::vector<int32_t>, std::vector<float>> greedy(rank_engine& e, sequence_id seq,
                                                           int steps) {
  std::vector<int32_t> ids;
  std::vector<float> all, one;
  std::vector<sequence_id> batch{seq};
  for (int i = 0; i < steps; ++i) {
    auto out = e.decode_step(batch, &one);
    BOOST_REQUIRE(out[0].status == engine_status::ok);
    ids.push_back(out[0].token.id);
    all.insert(all.end(), one.begin(), one.end());
  }
  return {ids, all};
}

/// Prefills `prompt` exactly with a hit of `hit` tokens: blocks of `src`, snapshot `snap`.
std::pair<sequence_id, prefill_progress> prefill_hit(rank_engine& e, const std::vector<int32_t>& prompt,
                                                     sequence_id src, int64_t hit,
                                                     const std::vector<std::byte>& snap) {
  prefill_request req;
  req.seq = next_seq();
  req.tokens = prompt;
  req.mode = decoder_mode::exact;
  req.sampling.max_tokens = 1 << 20;
  req.hit_length = hit;
  req.snapshot = snap;
  for (int64_t b = 0; b < hit / 128; ++b)
    req.hit_blocks.push_back(*e.export_block(src, b));
  auto p = e.prefill(req);
  BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
  return {req.seq, std::move(p)};
}

} // namespace

BOOST_AUTO_TEST_SUITE(exact_hit)

BOOST_AUTO_TEST_CASE(hit_on_a_prefill_snapshot_gives_the_same_greedy_output_as_no_hit) {
  auto& e = tiny_engine();
  auto prompt = random_tokens(1500, 31);
  // An earlier turn of 1100 tokens left its blocks and a snapshot at align_down(1099, 128) = 1024.
  auto [a, a_logits] = prefill_fresh({prompt.begin(), prompt.begin() + 1100}, decoder_mode::exact);
  BOOST_REQUIRE(e.snapshot_end(a).value_or(-1) == 1024);
  auto snap = *e.export_snapshot(a);
  auto [cold, cold_logits] = prefill_fresh(prompt, decoder_mode::exact);
  auto [hot, p] = prefill_hit(e, prompt, a, 1024, snap);
  BOOST_TEST(max_abs_diff(p.logits, cold_logits) == 0.0f);
  auto [cold_ids, cold_steps] = greedy(e, cold, 24);
  auto [hot_ids, hot_steps] = greedy(e, hot, 24);
  BOOST_TEST(hot_ids == cold_ids, boost::test_tools::per_element());
  BOOST_TEST(max_abs_diff(hot_steps, cold_steps) == 0.0f);
  // The hot sequence's own snapshot (at 1408) serves the next turn exactly: hits chain.
  BOOST_REQUIRE(e.snapshot_end(hot).value_or(-1) == 1408);
  auto next = prompt;
  auto more = random_tokens(200, 35);
  next.insert(next.end(), more.begin(), more.end());
  auto [next_cold, next_cold_logits] = prefill_fresh(next, decoder_mode::exact);
  auto [next_hot, np] = prefill_hit(e, next, hot, 1408, *e.export_snapshot(hot));
  BOOST_TEST(max_abs_diff(np.logits, next_cold_logits) == 0.0f);
  e.free(next_cold);
  e.free(next_hot);
  // A truncated decoder part is refused, never misread.
  prefill_request bad;
  bad.seq = next_seq();
  bad.tokens = prompt;
  bad.mode = decoder_mode::exact;
  bad.hit_length = 1024;
  bad.snapshot = snap;
  bad.snapshot->resize(snap.size() - 8);
  for (int64_t b = 0; b < 8; ++b)
    bad.hit_blocks.push_back(*e.export_block(a, b));
  BOOST_TEST((e.prefill(bad).status == engine_status::bad_kv));
  for (auto s : {a, cold, hot})
    e.free(s);
}

BOOST_AUTO_TEST_CASE(hit_on_a_decode_snapshot_after_a_handoff_gives_the_same_greedy_output) {
  auto& e = tiny_engine();
  // Turn 1: prefill 600 tokens on one "rank", hand over, decode past 640 on the other.
  auto [pre, pre_logits] = prefill_fresh(random_tokens(600, 32), decoder_mode::exact);
  auto bytes = e.export_sequence(pre);
  BOOST_REQUIRE(bytes);
  auto dec = next_seq();
  sampling_params sp;
  sp.max_tokens = 1 << 20;
  BOOST_REQUIRE(e.import_sequence(dec, *bytes, sp) == engine_status::ok);
  e.free(pre);
  greedy(e, dec, 60);
  BOOST_REQUIRE(e.snapshot_end(dec).value_or(-1) == 640);
  auto snap = *e.export_snapshot(dec);
  // Turn 2: everything so far plus a new message of 300 tokens; the hit is the 640 boundary.
  auto prompt = e.tokens(dec);
  auto more = random_tokens(300, 33);
  prompt.insert(prompt.end(), more.begin(), more.end());
  auto [cold, cold_logits] = prefill_fresh(prompt, decoder_mode::exact);
  auto [hot, p] = prefill_hit(e, prompt, dec, 640, snap);
  BOOST_TEST(max_abs_diff(p.logits, cold_logits) == 0.0f);
  BOOST_TEST(p.first.id == static_cast<int32_t>(std::max_element(cold_logits.begin(), cold_logits.end()) -
                                                 cold_logits.begin()));
  auto [cold_ids, cold_steps] = greedy(e, cold, 20);
  auto [hot_ids, hot_steps] = greedy(e, hot, 20);
  BOOST_TEST(hot_ids == cold_ids, boost::test_tools::per_element());
  BOOST_TEST(max_abs_diff(hot_steps, cold_steps) == 0.0f);
  for (auto s : {dec, cold, hot})
    e.free(s);
}

BOOST_AUTO_TEST_CASE(bounded_snapshots_carry_no_decoder_window_and_bounded_hits_ignore_it) {
  auto& e = tiny_engine();
  auto prompt = random_tokens(900, 34);
  auto [b, b_logits] = prefill_fresh({prompt.begin(), prompt.begin() + 700}, decoder_mode::bounded);
  auto [x, x_logits] = prefill_fresh({prompt.begin(), prompt.begin() + 700}, decoder_mode::exact);
  // The exact snapshot is the bounded one (same encoder window) plus the decoder windows.
  auto sb = *e.export_snapshot(b), sx = *e.export_snapshot(x);
  BOOST_TEST(sx.size() > sb.size());
  BOOST_TEST((std::vector<std::byte>(sx.begin(), sx.begin() + static_cast<int64_t>(sb.size())) == sb));
  // A bounded prefill given the exact snapshot uses its encoder part only: same as with sb.
  auto [cold, cold_logits] = prefill_fresh(prompt, decoder_mode::bounded);
  for (const auto* snap : {&sb, &sx}) {
    prefill_request req;
    req.seq = next_seq();
    req.tokens = prompt;
    req.hit_length = 640;
    req.snapshot = *snap;
    for (int64_t i = 0; i < 5; ++i)
      req.hit_blocks.push_back(*e.export_block(b, i));
    auto p = e.prefill(req);
    BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
    BOOST_TEST(max_abs_diff(p.logits, cold_logits) == 0.0f);
    e.free(req.seq);
  }
  for (auto s : {b, x, cold})
    e.free(s);
}

// The hit's blocks arriving after the encoder ran (a block fetch overlapped with the prompt's own
// compute, through the chunk scheduler): the decoder waits for them, then the result is the
// same bits as with the blocks up front. Wrong blocks are refused and leave it waiting.
BOOST_AUTO_TEST_CASE(blocks_imported_after_the_encoder_give_the_same_result) {
  auto& e = tiny_engine();
  auto prompt = random_tokens(1500, 41);
  auto [a, a_logits] = prefill_fresh({prompt.begin(), prompt.begin() + 1100}, decoder_mode::exact);
  auto snap = *e.export_snapshot(a);
  auto [up_front, p] = prefill_hit(e, prompt, a, 1024, snap);
  std::vector<std::vector<std::byte>> blocks;
  for (int64_t b = 0; b < 8; ++b)
    blocks.push_back(*e.export_block(a, b));
  // 1 ms per step + 10 us per token: several chunks of the 476 new tokens
  const deepinfer::balancers::cost_model m({.a0 = 1e-3, .a1 = 1e-5});
  prefill_scheduler s(prefill_scheduler::config{2e6, 16}, e, m);
  prefill_request req;
  req.seq = next_seq();
  req.tokens = prompt;
  req.mode = decoder_mode::exact;
  req.sampling.max_tokens = 1 << 20;
  req.hit_length = 1024;
  req.snapshot = snap;
  req.blocks_later = true;
  BOOST_REQUIRE(s.submit(req).status == engine_status::ok);
  BOOST_TEST(e.awaiting_blocks(req.seq));
  int steps = 0;
  for (; steps < 100; ++steps) { // the encoder runs to the end of the prompt, then it all waits
    auto st = s.step();
    BOOST_REQUIRE(st.finished.empty());
    if (st.chunks.empty())
      break;
  }
  BOOST_TEST(steps >= 2);
  BOOST_TEST(e.computed(req.seq).value_or(0) == 1500);
  std::string err;
  auto wrong = blocks;
  wrong.pop_back();
  BOOST_TEST((e.import_hit_blocks(req.seq, wrong, &err) == engine_status::invalid_request));
  wrong = blocks;
  wrong[3][70] = std::byte{0x5a}; // a header byte: not a block of this model any more
  wrong[3][0] = std::byte{0};
  BOOST_TEST((e.import_hit_blocks(req.seq, wrong, &err) == engine_status::bad_kv));
  BOOST_TEST(e.awaiting_blocks(req.seq));
  BOOST_REQUIRE(e.import_hit_blocks(req.seq, blocks, &err) == engine_status::ok);
  auto st = s.step();
  BOOST_REQUIRE(st.finished.size() == 1u);
  BOOST_TEST(max_abs_diff(st.finished[0].second.logits, p.logits) == 0.0f);
  auto [ids_a, steps_a] = greedy(e, up_front, 8);
  auto [ids_b, steps_b] = greedy(e, req.seq, 8);
  BOOST_TEST(ids_a == ids_b, boost::test_tools::per_element());
  BOOST_TEST(max_abs_diff(steps_a, steps_b) == 0.0f);
  for (auto seq : {a, up_front, req.seq})
    e.free(seq);
}

BOOST_AUTO_TEST_SUITE_END()
