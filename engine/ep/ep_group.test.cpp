// Expert parallelism on the tiny model: EP = 1, 2, 3, 4 give the logits of one rank that runs
// every expert, bit for bit, for chunked prefill and batched decode with uneven per-rank batches
// and an empty rank; a re-placement between two steps changes no bit; a group rebuilt from
// 3 of 4 ranks continues with the same bits.
#include <chrono>
#include <cstring>
#include <thread>

#include <boost/test/unit_test.hpp>

#include "engine/testing/ep_test_run.hpp"

namespace deepinfer::engine {

using namespace testing;

BOOST_AUTO_TEST_SUITE(expert_parallel)

BOOST_AUTO_TEST_CASE(ep_1_2_3_4_give_the_single_rank_logits_bit_for_bit) {
  for (int ep : {1, 2, 3, 4}) {
    ep_group group(model_config::tiny(), group_config(ep));
    for (int r = 0; r < ep; ++r)
      engine(r).join_ep_group(group.rank(r));
    ep_run run(engines(ep));
    run.prefill(&group, spread(ep));
    run.decode(&group, spread(ep), decode_steps);
    require_identical(run.logits(), "EP" + std::to_string(ep));
    // Each rank keeps only its slots' experts; every rank of the group saw the same steps.
    const int spr = group.rank(0).placement().slots_per_rank();
    BOOST_TEST(spr == expert_placement::slots_per_rank(16, ep, 1));
    BOOST_TEST(group.rank(0).routed_expert_bytes() ==
               static_cast<std::size_t>(8 * spr) * 3 * 128 * 128 * sizeof(float));
    for (int r = 1; r < ep; ++r)
      BOOST_TEST(run.stats[static_cast<std::size_t>(r)].back().moe_lb == run.stats[0].back().moe_lb);
    BOOST_TEST(run.stats[0].back().moe_lb >= 1.0);
    // Every rank computed rows for the group, the one without requests too.
    std::vector<int64_t> rows(static_cast<std::size_t>(ep), 0);
    for (const auto& st : run.stats[0])
      for (int r = 0; r < ep; ++r)
        rows[static_cast<std::size_t>(r)] += st.rank_rows[static_cast<std::size_t>(r)];
    for (int r = 0; r < ep; ++r)
      BOOST_TEST(rows[static_cast<std::size_t>(r)] > 0, "rank " << r << " computed no expert row");
    // The routed-token counters of all ranks add up to every token's top-2 in every layer.
    int64_t routed = 0, tokens = 0;
    for (int r = 0; r < ep; ++r)
      for (auto v : group.rank(r).routed_tokens())
        routed += v;
    for (const auto& p : prompts())
      tokens += static_cast<int64_t>(p.size());
    // Encoder: every prompt token and decode token; decoder: the last 128 prompt tokens (bounded
    // mode; the last layer only the last one) and each decode token.
    int64_t decoder_rows = 0;
    for (const auto& p : prompts())
      decoder_rows += std::min<int64_t>(128, static_cast<int64_t>(p.size()));
    const int64_t decoded = 6 * decode_steps;
    BOOST_TEST(routed == 2 * (4 * (tokens + decoded) + 3 * (decoder_rows + decoded) + (6 + decoded)));
  }
}

BOOST_AUTO_TEST_CASE(prefill_instances_with_4_redundant_slots_per_rank_give_the_same_bits) {
  for (int ep : {2, 4}) {
    auto cfg = group_config(ep);
    cfg.settings = ep_settings::prefill();
    cfg.settings.interval = 0;
    ep_group group(model_config::tiny(), cfg);
    for (int r = 0; r < ep; ++r)
      engine(r).join_ep_group(group.rank(r));
    BOOST_TEST(group.rank(0).placement().slots_per_rank() == (16 + 4 * ep) / ep);
    ep_run run(engines(ep));
    run.prefill(&group, spread(ep));
    run.decode(&group, spread(ep), decode_steps);
    require_identical(run.logits(), "prefill settings EP" + std::to_string(ep));
  }
}

BOOST_AUTO_TEST_CASE(re_placement_between_two_steps_changes_no_bit) {
  // Once asked for after decode step 2, then every 2 steps from a window of 2 steps.
  for (int interval : {0, 2}) {
    auto cfg = group_config(4);
    cfg.settings.interval = interval;
    cfg.settings.window = 2;
    ep_group group(model_config::tiny(), cfg);
    for (int r = 0; r < 4; ++r)
      engine(r).join_ep_group(group.rank(r));
    const auto before = group.rank(0).placement();
    ep_run run(engines(4));
    run.prefill(&group, spread(4));
    run.decode(&group, spread(4), decode_steps, interval == 0 ? std::optional<int>{2} : std::nullopt);
    BOOST_TEST_CONTEXT("interval " << interval) {
      require_identical(run.logits(), "re-placed EP4");
      int64_t replaced = 0, moves = 0;
      for (const auto& st : run.stats[0]) {
        replaced += st.replaced;
        moves += st.moves;
      }
      BOOST_TEST(replaced == (interval == 0 ? 1 : static_cast<int64_t>(run.stats[0].size()) / 2));
      BOOST_TEST(moves > 0);
      BOOST_TEST(group.rank(0).replacements() == replaced);
      // After it: every expert has a slot, every rank 5 slots, every rank the same placement.
      const auto& after = group.rank(0).placement();
      BOOST_TEST(after.check() == "");
      BOOST_TEST(after.slots_per_rank() == 5);
      BOOST_TEST(!(after == before));
      for (int r = 1; r < 4; ++r)
        BOOST_TEST((group.rank(r).placement() == after));
      for (int l = 0; l < after.layers(); ++l)
        for (int r = 0; r < 4; ++r)
          BOOST_TEST(after.rank_experts(l, r).size() == 5u);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_group_rebuilt_from_3_of_4_ranks_continues_with_the_same_bits) {
  auto g4 = std::make_unique<ep_group>(model_config::tiny(), group_config(4));
  for (int r = 0; r < 4; ++r)
    engine(r).join_ep_group(g4->rank(r));
  ep_run run(engines(4));
  const auto a4 = spread(4); // {0, 1, 2}, {3}, {}, {4, 5}
  run.prefill(g4.get(), a4);
  run.decode(g4.get(), a4, 3);
  // Rank 3 fails: the healthy ranks 0-2 form a group of 3, placed from the old group's loads;
  // they keep their sequences, the failed rank's requests start over on them.
  ep_group g3(model_config::tiny(), ep_group::config::rebuilt(g4->rank(0), 3));
  for (int r = 0; r < 3; ++r)
    engine(r).join_ep_group(g3.rank(r));
  g4.reset();
  BOOST_TEST(g3.rank(0).placement().check() == "");
  BOOST_TEST(g3.rank(0).placement().slots_per_rank() == 7);
  run.forget(4);
  run.forget(5);
  run.set_engines(engines(3));
  const assignment moved{{}, {5}, {4}};
  run.prefill(&g3, moved);
  run.decode(&g3, {{0, 1, 2}, {3, 5}, {4}}, decode_steps - 3);
  run.decode(&g3, moved, 3);
  require_identical(run.logits(), "EP4 -> EP3");
}

namespace {

/// Prefills prompts()[prompt] on engine(rank) in one chunk (its MoE rounds go through the rank's
/// group), frees the sequence and returns the last position's logits (empty when it failed).
std::vector<float> prefill_whole(int rank, uint64_t seq, int prompt) {
  prefill_request pr;
  pr.seq = sequence_id{seq};
  pr.tokens = prompts()[static_cast<std::size_t>(prompt)];
  pr.sampling.max_tokens = 1;
  auto p = engine(rank).prefill(pr);
  engine(rank).free(pr.seq);
  return p.done ? std::move(p.logits) : std::vector<float>{};
}

/// The one-engine reference's prefill logits of prompts()[prompt], bit for bit.
bool reference_bits(const std::vector<float>& logits, int prompt) {
  const auto& want = reference()[static_cast<std::size_t>(prompt)][0];
  return logits.size() == want.size() && std::memcmp(logits.data(), want.data(), want.size() * 4) == 0;
}

} // namespace

// A rank woken for a step another started serves its rounds one at a time (so its owner can
// read messages between them) and then joins the step with a forward of its own: its rounds
// meet the others' remaining ones, layer against layer of another depth. Same bits, one step.
BOOST_AUTO_TEST_CASE(a_rank_that_joins_a_step_between_its_serve_rounds_changes_no_bit) {
  for (int served : {0, 1, 3, 6, -1}) { // -1: serves to the end and joins no forward
    BOOST_TEST_CONTEXT("rounds served first " << served) {
      ep_group group(model_config::tiny(), group_config(2));
      for (int r = 0; r < 2; ++r)
        engine(r).join_ep_group(group.rank(r));
      std::vector<float> long_logits, short_logits;
      std::vector<bool> over_early;
      int served_rounds = 0;
      // Rank 1: the 260-token prompt in one chunk (4 encoder and 4 decoder MoE rounds).
      std::thread long_rank([&] {
        long_logits = prefill_whole(1, 900 + static_cast<uint64_t>(served + 1) * 2, 2);
        group.rank(1).end_step();
      });
      // Rank 0: serves `served` rounds, then prefills the 37-token prompt in the same step.
      auto& me = group.rank(0);
      bool over = false;
      for (int i = 0; served < 0 ? !over : i < served; ++i) {
        over = me.serve_round();
        ++served_rounds;
        over_early.push_back(over);
      }
      if (served >= 0) {
        short_logits = prefill_whole(0, 901 + static_cast<uint64_t>(served + 1) * 2, 0);
        BOOST_TEST(me.forwarded_in_step());
      }
      me.end_step();
      long_rank.join();
      BOOST_TEST(me.steps() == 1);
      BOOST_TEST(group.rank(1).steps() == 1);
      BOOST_TEST(reference_bits(long_logits, 2));
      if (served >= 0) {
        for (bool b : over_early)
          BOOST_TEST(!b, "the step's rounds ended while rank 0 still had a forward to run");
        BOOST_TEST(reference_bits(short_logits, 0));
      } else {
        // At least a round per MoE layer of rank 1's forward (8), and the one where both were done.
        BOOST_TEST(served_rounds > 8);
      }
    }
  }
}

// A rank in the middle of a long forward computes, between two pieces of it, the rows another
// rank's short forward waits on (serve_waiting), instead of at its own next MoE layer: the
// short forward is not paced by the long one's layers. Same bits.
BOOST_AUTO_TEST_CASE(a_long_forward_serves_a_waiting_short_one_between_its_pieces_with_the_same_bits) {
  ep_group group(model_config::tiny(), group_config(2));
  for (int r = 0; r < 2; ++r)
    engine(r).join_ep_group(group.rank(r));
  std::vector<float> short_logits, long_logits;
  // Rank 1: the 37-token prompt; its first MoE round waits for rank 0.
  std::thread short_rank([&] {
    short_logits = prefill_whole(1, 950, 0);
    group.rank(1).end_step();
  });
  // Rank 0 starts the 260-token prompt once rank 1 waits with rows (a deadline, not a sleep).
  auto& me = group.rank(0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!me.others_wait_with_rows() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  BOOST_TEST(me.others_wait_with_rows());
  const int64_t early = me.served_early();
  long_logits = prefill_whole(0, 951, 2);
  me.end_step();
  short_rank.join();
  // At least the round rank 1 waited in before rank 0's first MoE layer.
  BOOST_TEST(me.served_early() > early);
  BOOST_TEST(me.steps() == group.rank(1).steps());
  BOOST_TEST(reference_bits(short_logits, 0));
  BOOST_TEST(reference_bits(long_logits, 2));
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace deepinfer::engine
