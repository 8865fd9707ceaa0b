// OpenAI's Predicted Outputs: a request's prediction is drafted (predicted_drafts) and verified
// like the draft head's drafts, so the output equals plain decoding token for token (greedy and
// sampled), whatever the prediction: right, edited, or unrelated; a right one is accepted whole.
#include <algorithm>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/decode_loop.hpp"
#include "engine/predicted_drafts.hpp"
#include "engine/testing/draft_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

std::vector<int32_t> drafts_of(const draft_proposal& p) { return {p.tokens, p.tokens + p.count}; }

struct run_result {
  std::vector<int32_t> tokens;
  int64_t drafted = 0, accepted = 0, steps = 0;
};

/// Decodes `j` through `run_decode_step` (what a decode rank runs) with or without a planner.
run_result run(rank_engine& e, spec_planner* planner, decode_job j) {
  run_result r;
  const auto seq = start_job(e, j);
  r.tokens = j.got;
  if (!seq)
    return r;
  std::vector<sequence_id> one{*seq};
  for (bool done = false; !done;) {
    auto outs = run_decode_step(e, planner, one);
    BOOST_REQUIRE(outs[0].status == engine_status::ok);
    for (const auto& t : outs[0].tokens)
      r.tokens.push_back(t.id);
    r.drafted += outs[0].drafted;
    r.accepted += outs[0].accepted;
    ++r.steps;
    done = outs[0].finished;
  }
  e.free(*seq);
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(predicted_outputs)

BOOST_AUTO_TEST_CASE(drafts_follow_the_prediction_and_pick_it_up_again_after_an_edit) {
  const std::vector<int32_t> pred = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
  auto at = [&](std::vector<int32_t> out) { return drafts_of(predicted_drafts(pred, out)); };
  BOOST_TEST(at({}) == (std::vector<int32_t>{10, 11, 12, 13, 14}));
  BOOST_TEST(at({10, 11}) == (std::vector<int32_t>{12, 13, 14, 15, 16}));
  BOOST_TEST(at({10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}) == (std::vector<int32_t>{21}));
  BOOST_TEST(at(pred).empty()); // all of it out: nothing left to offer
  // An insertion (99 98), then the prediction again: picked up after its last 3 tokens.
  BOOST_TEST(at({10, 11, 99, 98}).empty());
  BOOST_TEST(at({10, 11, 99, 98, 12, 13, 14}) == (std::vector<int32_t>{15, 16, 17, 18, 19}));
  // A deletion (12..14 dropped).
  BOOST_TEST(at({10, 11, 15, 16, 17}) == (std::vector<int32_t>{18, 19, 20, 21}));
  // A repeated run: the occurrence nearest to where the output stands.
  const std::vector<int32_t> rep = {1, 2, 3, 7, 1, 2, 3, 8, 1, 2, 3, 9};
  BOOST_TEST(drafts_of(predicted_drafts(rep, std::vector<int32_t>{5, 5, 5, 5, 1, 2, 3})) ==
             (std::vector<int32_t>{8, 1, 2, 3, 9}));
  BOOST_TEST(drafts_of(predicted_drafts(rep, std::vector<int32_t>{5, 1, 2, 3})) == (std::vector<int32_t>{7, 1, 2, 3, 8}));
  auto p = predicted_drafts(pred, std::vector<int32_t>{10});
  BOOST_TEST(p.predicted);
  BOOST_TEST(p.confidence[0] == 1.0f);
  BOOST_TEST(predicted_drafts({}, std::vector<int32_t>{1, 2, 3}).count == 0);
}

BOOST_AUTO_TEST_CASE(a_prediction_never_changes_the_output_and_a_right_one_is_accepted_whole) {
  // Without a head (speculation off: no planner) and with one (the planner prices the head's
  // drafts; a prediction's are all verified).
  for (auto mode : {speculative_mode::off, speculative_mode::variable}) {
    auto e = load_draft_engine(mode);
    std::unique_ptr<spec_planner> planner;
    if (mode != speculative_mode::off)
      planner = std::make_unique<spec_planner>(mode);
    for (float temperature : {0.0f, 0.9f}) {
      decode_job j;
      j.prompt = random_tokens(60, 5, 512);
      j.sampling.max_tokens = 40;
      j.sampling.temperature = temperature;
      j.sampling.seed = 77;
      j.sampling.output_from = static_cast<int64_t>(j.prompt.size());
      const auto want = plain_output(*e, j);
      BOOST_REQUIRE_EQUAL(want.size(), 40u);
      // Right: the output itself. Edited: a few tokens changed and some inserted. Unrelated.
      auto edited = want;
      edited[12] = (edited[12] + 1) % 512;
      edited.insert(edited.begin() + 25, {3, 4, 5});
      const std::vector<std::vector<int32_t>> predictions = {want, edited, random_tokens(40, 99, 512)};
      for (std::size_t k = 0; k < predictions.size(); ++k) {
        auto with = j;
        with.sampling.prediction = predictions[k];
        const auto got = run(*e, planner.get(), with);
        BOOST_TEST_MESSAGE("mode " << to_string(mode) << " T " << temperature << " prediction " << k);
        BOOST_TEST(got.tokens == want);
        if (k == 0) {
          // Everything after the first token was drafted and accepted: 39 tokens in 7 steps.
          BOOST_TEST(got.accepted == 39 - got.steps);
          BOOST_TEST(got.drafted == got.accepted);
          BOOST_TEST(got.steps <= 8);
        }
        if (k == 1)
          BOOST_TEST(got.accepted > 25); // picked up again after the edits
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
