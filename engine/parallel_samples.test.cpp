// Parallel samples (OpenAI's `n`): one prefill serves every sample, and each sample continues
// exactly as a request of its seed alone would; a seeded request resubmitted with what it
// generated continues its own random stream (one draw per output token, from output_from).
#include <set>

#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

/// Decodes `seq` until it finishes (at most `limit` steps), returning its generated tokens
/// after `first`.
std::vector<int32_t> decode_all(rank_engine& e, sequence_id seq, int32_t first, int limit) {
  std::vector<int32_t> out{first};
  std::vector<sequence_id> one{seq};
  for (int i = 0; i < limit; ++i) {
    auto o = e.decode_step(one)[0];
    if (o.status != engine_status::ok)
      break;
    out.push_back(o.token.id);
    if (o.finished)
      break;
  }
  return out;
}

prefill_request sampled_request(const std::vector<int32_t>& prompt, uint64_t seed) {
  prefill_request r;
  r.seq = next_seq();
  r.tokens = prompt;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.sampling.max_tokens = 12;
  r.sampling.logprobs = true;
  r.sampling.presence_penalty = 0.5f;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(parallel_samples)

BOOST_AUTO_TEST_CASE(each_sample_of_one_prefill_equals_its_seed_alone) {
  auto& e = tiny_engine();
  const auto prompt = random_tokens(300, 17);
  const std::vector<uint64_t> seeds{101, 102, 103, 104};
  // One prefill for the sample of seed 100 and its four siblings.
  auto shared = sampled_request(prompt, 100);
  shared.sample_seeds = seeds;
  auto p = e.prefill(shared);
  BOOST_REQUIRE(p.done);
  BOOST_REQUIRE_EQUAL(p.samples.size(), seeds.size());
  auto bytes = e.export_sequence(shared.seq);
  BOOST_REQUIRE(bytes);
  auto own = decode_all(e, shared.seq, p.first.id, 11);
  e.free(shared.seq);
  std::set<std::vector<int32_t>> distinct{own};
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    // The sibling: the shared KV with its own first token and seed ...
    sequence_id sib = next_seq();
    auto sampling = shared.sampling;
    sampling.seed = seeds[i];
    BOOST_REQUIRE(e.import_sequence(sib, *bytes, sampling, nullptr, p.samples[i].id) == engine_status::ok);
    auto got = decode_all(e, sib, p.samples[i].id, 11);
    e.free(sib);
    // ... equals a request of that seed alone, token for token and log-probability for bit.
    auto alone = sampled_request(prompt, seeds[i]);
    auto q = e.prefill(alone);
    BOOST_TEST(q.first.id == p.samples[i].id);
    BOOST_TEST(q.first.logprob == p.samples[i].logprob);
    auto want = decode_all(e, alone.seq, q.first.id, 11);
    e.free(alone.seq);
    BOOST_TEST(got == want, boost::test_tools::per_element());
    distinct.insert(got);
  }
  // At temperature 1 five seeds do not all draw the same 12 tokens.
  BOOST_TEST(distinct.size() > 1);
}

BOOST_AUTO_TEST_CASE(a_first_token_replaces_only_a_token_without_kv) {
  auto& e = tiny_engine();
  auto req = sampled_request(random_tokens(40, 5), 7);
  auto p = e.prefill(req);
  std::vector<sequence_id> one{req.seq};
  e.decode_step(one); // now two generated tokens: the first one has KV
  auto bytes = e.export_sequence(req.seq);
  e.free(req.seq);
  std::string why;
  BOOST_TEST((e.import_sequence(next_seq(), *bytes, req.sampling, &why, p.first.id) == engine_status::invalid_request));
  BOOST_TEST(!why.empty());
}

BOOST_AUTO_TEST_CASE(a_resubmitted_seeded_request_continues_its_own_random_stream) {
  auto& e = tiny_engine();
  const auto prompt = random_tokens(300, 23);
  auto first = sampled_request(prompt, 77);
  first.sampling.output_from = static_cast<int64_t>(prompt.size());
  auto p = e.prefill(first);
  const auto run = decode_all(e, first.seq, p.first.id, 11);
  e.free(first.seq);
  BOOST_REQUIRE(run.size() >= 7u);
  // Resubmitted after 5 tokens (its decode rank died): the prompt and those tokens, its decoder
  // anchored as for the prompt alone, what is left of max_tokens.
  auto again = first;
  again.seq = next_seq();
  again.tokens.insert(again.tokens.end(), run.begin(), run.begin() + 5);
  again.decoder_from = static_cast<int64_t>(prompt.size()) - 128;
  again.sampling.max_tokens = first.sampling.max_tokens - 5;
  auto q = e.prefill(again);
  BOOST_TEST(q.first.id == run[5]);
  // ... and moved once more (exported, imported elsewhere) it still draws the same tokens.
  auto bytes = e.export_sequence(again.seq);
  e.free(again.seq);
  const sequence_id moved = next_seq();
  BOOST_REQUIRE(e.import_sequence(moved, *bytes, again.sampling) == engine_status::ok);
  auto rest = decode_all(e, moved, q.first.id, 11);
  e.free(moved);
  const std::vector<int32_t> want(run.begin() + 5, run.end());
  BOOST_TEST(rest == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
