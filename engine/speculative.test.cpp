// Speculative decoding (DESIGN.md §5.3): verification in one forward changes no output token,
// under greedy (token for token against plain decode, over 240 prompts in changing batches) and
// at temperature > 0 (the sampled tokens' distribution, from independent seeds).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>

#include <boost/test/unit_test.hpp>

#include "engine/testing/draft_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

using job = decode_job;

std::unique_ptr<rank_engine> load_engine(speculative_mode m) { return load_draft_engine(m); }

} // namespace

BOOST_AUTO_TEST_SUITE(speculative)

BOOST_AUTO_TEST_CASE(the_draft_head_loads_and_proposes_deterministically) {
  auto e = load_engine(speculative_mode::fixed);
  BOOST_TEST(e->drafting());
  BOOST_TEST(e->model().draft_positions == 5);
  prefill_request req;
  req.seq = next_seq();
  req.tokens = random_tokens(40, 3, 512);
  req.sampling.max_tokens = 50;
  e->prefill(req);
  const auto a = e->proposal(req.seq);
  BOOST_TEST(a.count == 5);
  for (int j = 0; j < a.count; ++j) {
    BOOST_TEST((a.tokens[j] >= 0 && a.tokens[j] < 512));
    BOOST_TEST((a.confidence[j] > 0.0f && a.confidence[j] < 1.0f));
  }
  // Speculation off: no head is run and nothing is proposed.
  auto off = load_engine(speculative_mode::off);
  BOOST_TEST(!off->drafting());
  req.seq = next_seq();
  off->prefill(req);
  BOOST_TEST(off->proposal(req.seq).count == 0);
  // The same state proposes the same drafts in another engine.
  auto again = load_engine(speculative_mode::variable);
  req.seq = next_seq();
  again->prefill(req);
  const auto b = again->proposal(req.seq);
  BOOST_TEST(std::equal(a.tokens, a.tokens + 5, b.tokens));
  BOOST_TEST(std::equal(a.confidence, a.confidence + 5, b.confidence));
}

BOOST_AUTO_TEST_CASE(every_isa_proposes_the_same_drafts_and_confidences) {
  // The head runs on the backend's matmul and norm kernels (bit-identical on every ISA) and
  // scalar code: its proposals must not depend on the CPU.
  std::vector<draft_proposal> seen;
  for (auto isa : kernels::supported_cpu_isas()) {
    rank_engine::config cfg{64, 2, isa};
    cfg.speculative = speculative_mode::fixed;
    auto r = rank_engine::load(draft_model_dir(), cfg);
    BOOST_REQUIRE_MESSAGE(r.engine, r.error);
    prefill_request req;
    req.seq = next_seq();
    req.tokens = random_tokens(200, 9, 512);
    req.sampling.max_tokens = 20;
    r.engine->prefill(req);
    std::vector<verify_request> one{{req.seq, 5}};
    r.engine->verify_step(one);
    seen.push_back(r.engine->proposal(req.seq));
  }
  BOOST_REQUIRE(!seen.empty());
  for (const auto& p : seen) {
    BOOST_TEST(p.count == 5);
    BOOST_TEST(std::memcmp(p.tokens, seen[0].tokens, sizeof p.tokens) == 0);
    BOOST_TEST(std::memcmp(p.confidence, seen[0].confidence, sizeof p.confidence) == 0);
  }
}

BOOST_AUTO_TEST_CASE(greedy_output_is_plain_decodes_token_for_token_in_changing_batches) {
  auto off = load_engine(speculative_mode::off);
  auto spec = load_engine(speculative_mode::fixed);
  std::mt19937_64 rng(2024);
  std::vector<job> jobs(240);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto& j = jobs[i];
    // Mostly short prompts, some past a 128 boundary and past the indexer's top-k (256), so
    // rollbacks hit the rings' spare slots, boundary snapshots and the index key cache.
    const int64_t len = i % 8 == 0 ? 120 + static_cast<int64_t>(rng() % 200) : 1 + static_cast<int64_t>(rng() % 60);
    j.prompt = random_tokens(len, 100 + i, 512);
    j.sampling.max_tokens = 1 + static_cast<int32_t>(rng() % 40);
    j.want = plain_output(*off, j);
    // A third stop on a token of their own output (after its first few): the stop then lands
    // inside an accepted draft, and the request must end right there.
    if (i % 3 == 0 && j.want.size() > 4) {
      j.sampling.stop_ids = {j.want[2 + rng() % (j.want.size() - 3)]};
      j.want = plain_output(*off, j);
    }
  }
  // Requests join and leave a batch of up to 12 as they finish. Each step verifies, per request,
  // either the head's own drafts, or "oracle" drafts (the reference output with one token
  // changed at a random place, so long prefixes are accepted and then one is rejected), with a
  // prefix length from 0 to 5.
  std::deque<std::size_t> waiting;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    waiting.push_back(i);
  std::map<uint64_t, std::size_t> active;
  int64_t drafted = 0, accepted = 0, steps = 0, moves = 0;
  while (!waiting.empty() || !active.empty()) {
    const std::size_t cap = 1 + rng() % 12;
    while (active.size() < cap && !waiting.empty()) {
      if (auto seq = start_job(*spec, jobs[waiting.front()]))
        active[seq->value] = waiting.front();
      waiting.pop_front();
    }
    if (active.empty())
      continue;
    // Now and then a request moves mid-speculation (exported, dropped, imported under a new
    // id, as a handoff to another rank does): its windows must end exactly where its accepted
    // tokens do.
    if (rng() % 4 == 0) {
      auto it = std::next(active.begin(), static_cast<long>(rng() % active.size()));
      const auto ji = it->second;
      auto bytes = spec->export_sequence(sequence_id{it->first});
      BOOST_REQUIRE(bytes);
      spec->free(sequence_id{it->first});
      active.erase(it);
      const auto moved = next_seq();
      std::string err;
      BOOST_REQUIRE_MESSAGE(spec->import_sequence(moved, *bytes, jobs[ji].sampling, &err) == engine_status::ok, err);
      active[moved.value] = ji;
      ++moves;
    }
    std::vector<verify_request> reqs;
    for (auto& [id, ji] : active) {
      auto& j = jobs[ji];
      const sequence_id seq{id};
      if (rng() % 2 == 0) {
        draft_proposal p;
        const std::size_t at = j.got.size();
        p.count = static_cast<int32_t>(std::min<std::size_t>(5, j.want.size() - std::min(at, j.want.size())));
        for (int32_t k = 0; k < p.count; ++k)
          p.tokens[k] = j.want[at + static_cast<std::size_t>(k)];
        if (p.count > 0 && rng() % 2 == 0) {
          auto& t = p.tokens[rng() % static_cast<std::size_t>(p.count)];
          t = (t + 1) % 512;
        }
        BOOST_REQUIRE(spec->set_proposal(seq, p));
      }
      reqs.push_back({seq, static_cast<int32_t>(rng() % 6)});
    }
    auto outs = spec->verify_step(reqs);
    ++steps;
    for (auto& o : outs) {
      BOOST_REQUIRE(o.status == engine_status::ok);
      BOOST_REQUIRE(!o.tokens.empty());
      BOOST_TEST(o.accepted <= o.drafted);
      BOOST_TEST(o.tokens.size() <= static_cast<std::size_t>(o.accepted + 1));
      drafted += o.drafted;
      accepted += o.accepted;
      auto& j = jobs[active.at(o.seq.value)];
      for (auto& t : o.tokens)
        j.got.push_back(t.id);
      if (o.finished) {
        spec->free(o.seq);
        active.erase(o.seq.value);
      }
    }
  }
  std::size_t same = 0;
  for (auto& j : jobs)
    same += j.got == j.want;
  BOOST_TEST(same == jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i].got != jobs[i].want) {
      BOOST_TEST_MESSAGE("first differing request: " << i);
      break;
    }
  // The run did speculate: many drafts accepted, in fewer steps than tokens.
  BOOST_TEST(accepted > drafted / 4);
  BOOST_TEST(moves > 20);
  BOOST_TEST_MESSAGE("steps " << steps << " drafted " << drafted << " accepted " << accepted << " moves " << moves);
}

BOOST_AUTO_TEST_CASE(sampled_tokens_follow_the_targets_distribution_with_speculation) {
  // One prompt's state, cloned into many sequences with independent seeds: plain decode with
  // seeds [1, N], speculation (every draft verified) with seeds [N + 1, 2N]. The tokens at the
  // first two decode positions (the second is where the first draft is accepted or rejected)
  // must have the same distribution. With top_k 8 (8 outcomes per position, 64 pairs) and
  // N = 1500 per side, the expected total-variation distance of two empirical samples of the
  // same distribution over the pairs is at most sqrt(64 / N) / sqrt(2) ~ 0.15; the bound 0.25
  // is fixed here, beforehand, for this N (a shift of 1/N per sample moves TV by at most 1/N:
  // exceeding the expectation by 0.1 has probability below exp(-0.1^2 N) ~ 3e-7).
  constexpr int n = 1500;
  constexpr double bound = 0.25;
  auto off = load_engine(speculative_mode::off);
  auto spec = load_engine(speculative_mode::fixed);
  prefill_request req;
  req.seq = next_seq();
  req.tokens = random_tokens(30, 77, 512);
  req.sampling.max_tokens = 1 << 20;
  BOOST_REQUIRE(off->prefill(req).status == engine_status::ok);
  const auto state = off->export_sequence(req.seq);
  BOOST_REQUIRE(state);
  off->free(req.seq);
  sampling_params sp;
  sp.temperature = 1.0f;
  sp.top_k = 8;
  sp.max_tokens = 1 << 20;
  std::map<std::pair<int32_t, int32_t>, int> plain, specd;
  int64_t accepted = 0;
  constexpr int batch = 250;
  for (int b0 = 0; b0 < n; b0 += batch) {
    std::vector<sequence_id> a, s;
    for (int i = b0; i < b0 + batch; ++i) {
      sp.seed = static_cast<uint64_t>(i + 1);
      a.push_back(next_seq());
      BOOST_REQUIRE(off->import_sequence(a.back(), *state, sp) == engine_status::ok);
      sp.seed = static_cast<uint64_t>(n + i + 1);
      s.push_back(next_seq());
      BOOST_REQUIRE(spec->import_sequence(s.back(), *state, sp) == engine_status::ok);
    }
    auto first = off->decode_step(a);
    auto second = off->decode_step(a);
    for (int i = 0; i < batch; ++i)
      ++plain[{first[i].token.id, second[i].token.id}];
    // An imported sequence has no proposal yet: one plain step drafts, the next verifies.
    std::vector<verify_request> none, all;
    for (auto id : s) {
      none.push_back({id, 0});
      all.push_back({id, 5});
    }
    auto v0 = spec->verify_step(none);
    // The random head rarely drafts a likely token: draft the plain run's most frequent second
    // token after the same first one (any draft is lossless; a likely one gets accepted often).
    for (int i = 0; i < batch; ++i) {
      std::pair<int, int32_t> best{0, 0};
      for (auto& [k, count] : plain)
        if (k.first == v0[i].tokens[0].id && count > best.first)
          best = {count, k.second};
      draft_proposal p = spec->proposal(s[i]);
      if (best.first > 0)
        p.tokens[0] = best.second;
      BOOST_REQUIRE(spec->set_proposal(s[i], p));
    }
    auto v1 = spec->verify_step(all);
    for (int i = 0; i < batch; ++i) {
      BOOST_REQUIRE(v0[i].tokens.size() == 1);
      BOOST_REQUIRE(!v1[i].tokens.empty());
      accepted += v1[i].accepted;
      ++specd[{v0[i].tokens[0].id, v1[i].tokens[0].id}];
    }
    for (auto id : a)
      off->free(id);
    for (auto id : s)
      spec->free(id);
  }
  std::map<std::pair<int32_t, int32_t>, int> keys = plain;
  keys.insert(specd.begin(), specd.end());
  double tv = 0.0;
  for (auto& [k, _] : keys)
    tv += std::fabs(plain[k] - specd[k]) / n;
  tv /= 2;
  BOOST_TEST_MESSAGE("TV " << tv << " over " << keys.size() << " pairs, drafts accepted " << accepted);
  BOOST_TEST(tv < bound);
  // The second positions went through verification: many drafts were accepted.
  BOOST_TEST(accepted > n / 10);
}

BOOST_AUTO_TEST_SUITE_END()
