// Prefix hits: imported or shared blocks plus an SWA snapshot equal no hit; without a snapshot
// the encoder replays [h-128, h) and reuses the block KV; sequences move between ranks intact.
#include <boost/test/unit_test.hpp>

#include "engine/kv_codec.hpp"
#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

std::vector<float> decode_logits(rank_engine& e, sequence_id s, int steps) {
  std::vector<float> all, one;
  std::vector<sequence_id> ids{s};
  for (int i = 0; i < steps; ++i) {
    auto out = e.decode_step(ids, &one);
    BOOST_REQUIRE(out[0].status == engine_status::ok);
    all.insert(all.end(), one.begin(), one.end());
  }
  return all;
}

} // namespace

BOOST_AUTO_TEST_SUITE(prefix_hit)

BOOST_AUTO_TEST_CASE(hit_with_snapshot_equals_no_hit_for_imported_and_shared_blocks) {
  auto& e = tiny_engine();
  auto prompt = random_tokens(650, 21);
  // An earlier request on the first 600 tokens left blocks 0..3 and a snapshot at
  // align_down(599, 128) = 512; the hit policy caps the hit at L - 134, so 512 is what a
  // 650-token prompt can use.
  auto [a, a_logits] = prefill_fresh({prompt.begin(), prompt.begin() + 600}, decoder_mode::bounded);
  auto snap = e.export_snapshot(a);
  BOOST_REQUIRE(snap);
  auto [c, c_logits] = prefill_fresh(prompt, decoder_mode::bounded);
  auto c_next = decode_logits(e, c, 3);
  for (bool shared : {false, true}) {
    prefill_request req;
    req.seq = next_seq();
    req.tokens = prompt;
    req.hit_length = 512;
    req.snapshot = snap;
    for (int64_t b = 0; b < 4; ++b) {
      if (shared)
        req.shared_blocks.push_back(e.pool().table(a)[static_cast<std::size_t>(b)]);
      else
        req.hit_blocks.push_back(*e.export_block(a, b));
    }
    auto p = e.prefill(req);
    BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
    BOOST_TEST(max_abs_diff(p.logits, c_logits) == 0.0f);
    BOOST_TEST(max_abs_diff(decode_logits(e, req.seq, 3), c_next) == 0.0f);
    for (int64_t b = 0; b < 5; ++b)
      BOOST_TEST((*e.export_block(req.seq, b) == *e.export_block(c, b)));
    if (shared) {
      // Stored once: both tables point at the same blocks, which now count two references.
      BOOST_TEST(e.pool().table(req.seq)[0].value == e.pool().table(a)[0].value);
      BOOST_TEST(e.pool().ref_count(e.pool().table(a)[0]) == 2);
    }
    e.free(req.seq);
  }
  BOOST_TEST(e.pool().ref_count(e.pool().table(a)[0]) == 1);
  e.free(a);
  e.free(c);
}

BOOST_AUTO_TEST_CASE(replay_of_the_first_block_is_exact) {
  // Replaying [0, 128) truncates nothing, so the replayed window is the exact one.
  auto& e = tiny_engine();
  auto prompt = random_tokens(400, 26);
  auto [a, a_logits] = prefill_fresh(prompt, decoder_mode::bounded);
  prefill_request req;
  req.seq = next_seq();
  req.tokens = prompt;
  req.hit_length = 128;
  req.hit_blocks.push_back(*e.export_block(a, 0));
  auto p = e.prefill(req);
  BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
  BOOST_TEST(max_abs_diff(p.logits, a_logits) == 0.0f);
  e.free(a);
  e.free(req.seq);
}

BOOST_AUTO_TEST_CASE(decode_snapshots_at_block_boundaries_serve_later_hits_exactly) {
  // A conversation's next turn hits the blocks and the snapshot written during decode.
  auto& e = tiny_engine();
  auto [a, a_logits] = prefill_fresh(random_tokens(120, 27), decoder_mode::bounded);
  BOOST_TEST(!e.export_snapshot(a).has_value()); // shorter than one block
  std::vector<sequence_id> one{a};
  for (int i = 0; i < 10; ++i)
    e.decode_step(one); // crosses 128
  auto snap = e.export_snapshot(a);
  BOOST_REQUIRE(snap);
  auto turn = e.tokens(a);
  auto more = random_tokens(200, 28);
  turn.insert(turn.end(), more.begin(), more.end());
  auto [c, c_logits] = prefill_fresh(turn, decoder_mode::bounded);
  prefill_request req;
  req.seq = next_seq();
  req.tokens = turn;
  req.hit_length = 128;
  req.snapshot = snap;
  req.hit_blocks.push_back(*e.export_block(a, 0));
  auto p = e.prefill(req);
  BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
  BOOST_TEST(max_abs_diff(p.logits, c_logits) == 0.0f);
  e.free(a);
  e.free(c);
  e.free(req.seq);
}

BOOST_AUTO_TEST_CASE(snapshot_miss_replays_the_last_block_and_reuses_its_kv) {
  auto& e = tiny_engine();
  auto prompt = random_tokens(1200, 22);
  auto [a, a_logits] = prefill_fresh(prompt, decoder_mode::bounded);
  prefill_request req;
  req.seq = next_seq();
  req.tokens = prompt;
  req.hit_length = 1024;
  for (int64_t b = 0; b < 8; ++b)
    req.hit_blocks.push_back(*e.export_block(a, b));
  auto p = e.prefill(req);
  BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
  // The hit blocks are reused bit for bit, never recomputed.
  for (int64_t b = 0; b < 8; ++b)
    BOOST_TEST((*e.export_block(req.seq, b) == *e.export_block(a, b)));
  // Replay approximates the window of [897, 1024): the logits move (bench/ measures by how much).
  float diff = max_abs_diff(p.logits, a_logits);
  BOOST_TEST_MESSAGE("replay max_abs_logit_diff=" << diff);
  BOOST_TEST(diff > 0.0f);
  BOOST_TEST(std::isfinite(diff));
  e.free(a);
  e.free(req.seq);
}

BOOST_AUTO_TEST_CASE(sequence_export_import_round_trips_and_decodes_identically) {
  auto& e = tiny_engine();
  auto prompt = random_tokens(300, 23);
  auto [a, logits] = prefill_fresh(prompt, decoder_mode::bounded);
  auto bytes = e.export_sequence(a);
  BOOST_REQUIRE(bytes);
  auto b = next_seq();
  sampling_params sp;
  sp.max_tokens = 100;
  std::string err;
  BOOST_REQUIRE(e.import_sequence(b, *bytes, sp, &err) == engine_status::ok);
  BOOST_TEST((*e.export_sequence(b) == *bytes));
  BOOST_TEST(max_abs_diff(decode_logits(e, b, 3), decode_logits(e, a, 3)) == 0.0f);
  // A buffer from another model is refused.
  auto other = *bytes;
  auto at = std::string(reinterpret_cast<const char*>(other.data()), other.size()).find("DIKV");
  other[at + 8] = std::byte{'Z'};
  BOOST_TEST((e.import_sequence(next_seq(), other, sp, &err) == engine_status::bad_kv));
  BOOST_TEST(err.find("another model") != std::string::npos, err);
  e.free(a);
  e.free(b);
}

BOOST_AUTO_TEST_CASE(block_and_window_buffers_round_trip_bit_exactly) {
  auto& e = tiny_engine();
  auto [a, logits] = prefill_fresh(random_tokens(260, 24), decoder_mode::bounded);
  const auto& c = e.model();
  auto block = *e.export_block(a, 1);
  std::vector<float> rows(static_cast<std::size_t>(128 * c.kv_floats_per_token()));
  BOOST_TEST(kv_codec::decode_block(block, 128, c.kv_floats_per_token(), c.fingerprint, rows.data())
                 .empty());
  BOOST_TEST((kv_codec::encode_block(rows.data(), 128, c.kv_floats_per_token(), c.fingerprint) ==
              block));
  auto snap = *e.export_snapshot(a);
  auto w = sequence_windows::make(c);
  kv_codec::window_info info;
  BOOST_TEST(kv_codec::decode_window(snap, c.fingerprint, w.encoder, info).empty());
  BOOST_TEST(info.end == 256);
  BOOST_TEST(info.count == 134);
  BOOST_TEST((kv_codec::encode_window(w.encoder, info.lo, c.fingerprint) == snap));
  block.resize(block.size() - 4);
  BOOST_TEST(!kv_codec::decode_block(block, 128, c.kv_floats_per_token(), c.fingerprint,
                                     rows.data())
                  .empty());
  e.free(a);
}

BOOST_AUTO_TEST_CASE(bad_requests_are_refused_as_values) {
  auto& e = tiny_engine();
  prefill_request req;
  req.seq = next_seq();
  req.tokens = random_tokens(300, 25);
  req.hit_length = 100;
  BOOST_TEST((e.begin_prefill(req).status == engine_status::invalid_request));
  req.hit_length = 128; // but no blocks given
  BOOST_TEST((e.begin_prefill(req).status == engine_status::invalid_request));
  req.hit_length = 0;
  req.tokens[5] = 129280;
  BOOST_TEST((e.begin_prefill(req).status == engine_status::invalid_request));
  std::vector<sequence_id> unknown{next_seq()};
  BOOST_TEST((e.decode_step(unknown)[0].status == engine_status::unknown_sequence));
}

BOOST_AUTO_TEST_SUITE_END()
