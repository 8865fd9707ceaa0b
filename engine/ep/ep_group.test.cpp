// Expert parallelism on the tiny model: EP = 1, 2, 3, 4 give the logits of one rank that runs
// every expert, bit for bit, for chunked prefill and batched decode with uneven per-rank batches
// and an empty rank; a re-placement between two steps changes no bit; a group rebuilt from
// 3 of 4 ranks continues with the same bits.
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include <condition_variable>
#include <deque>
#include <thread>

#include <boost/test/unit_test.hpp>

#include "engine/ep/ep_group.hpp"
#include "engine/testing/engine_fixture.hpp"
#include "engine/testing/ep_lockstep.hpp"

namespace deepinfer::engine {
namespace {

using testing::run_lockstep;

/// Per request: [0] the prefill's last-position logits, then one entry per decode step.
using trace = std::vector<std::vector<std::vector<float>>>;
/// Requests of each rank, by index into the prompts.
using assignment = std::vector<std::vector<int>>;

const std::vector<std::vector<int32_t>>& prompts() {
  static const auto p = [] {
    std::vector<std::vector<int32_t>> out;
    uint64_t seed = 160;
    for (int64_t n : {37, 150, 260, 5, 129, 90})
      out.push_back(testing::random_tokens(n, ++seed));
    return out;
  }();
  return p;
}

/// Engines of one rank each (one thread per backend), loaded once; tests join them to groups.
rank_engine& engine(int i) {
  static std::vector<std::unique_ptr<rank_engine>> engines = [] {
    std::vector<std::unique_ptr<rank_engine>> v;
    for (int r = 0; r < 5; ++r) {
      auto loaded = rank_engine::load(testing::tiny_model_dir(), rank_engine::config{48, 1, testing::fixture_isa()});
      if (!loaded.engine)
        BOOST_FAIL(loaded.error);
      v.push_back(std::move(loaded.engine));
    }
    return v;
  }();
  return *engines[static_cast<std::size_t>(i)];
}

/// Runs requests on ranks: each rank's engine, its sequences and the logits they produced.
class ep_run {
public:
  explicit ep_run(std::vector<rank_engine*> engines) : engines_(std::move(engines)), out_(prompts().size()) {}
  ~ep_run() {
    for (auto& [req, at] : seqs_)
      engines_[static_cast<std::size_t>(at.first)]->free(at.second);
  }

  /// Prefills every request of `a` (rank r's s-th request in step s, in 100-token chunks: a
  /// rank runs several encoder calls in a step, others none), through `group` or, without one,
  /// on engines_[0] alone.
  void prefill(ep_group* group, const assignment& a) {
    std::size_t steps = 0;
    for (const auto& r : a)
      steps = std::max(steps, r.size());
    run(group, a, static_cast<int>(steps), [&](int r, int s) {
      const auto& mine = a[static_cast<std::size_t>(r)];
      if (static_cast<std::size_t>(s) >= mine.size())
        return;
      const int req = mine[static_cast<std::size_t>(s)];
      auto& e = *engines_[static_cast<std::size_t>(r)];
      prefill_request pr;
      pr.seq = sequence_id{next_id_.fetch_add(1)};
      pr.tokens = prompts()[static_cast<std::size_t>(req)];
      pr.sampling.max_tokens = 1 << 20;
      auto p = e.begin_prefill(pr);
      while (p.status == engine_status::ok && !p.done)
        p = e.prefill_step(pr.seq, 100);
      record(req, r, pr.seq, p.status == engine_status::ok ? std::move(p.logits) : std::vector<float>{});
    });
  }

  /// `steps` batched decode steps, each rank over its requests in `a` (already prefilled there).
  void decode(ep_group* group, const assignment& a, int steps, std::optional<int> replace_after = {}) {
    run(group, a, steps, [&](int r, int s) {
      std::vector<sequence_id> ids;
      for (int req : a[static_cast<std::size_t>(r)])
        ids.push_back(seq(req));
      std::vector<float> lg;
      auto outs = engines_[static_cast<std::size_t>(r)]->decode_step(ids, &lg);
      const auto v = static_cast<std::size_t>(engines_[0]->model().vocab_size);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const int req = a[static_cast<std::size_t>(r)][i];
        std::vector<float> row;
        if (outs[i].status == engine_status::ok)
          row.assign(lg.begin() + static_cast<std::ptrdiff_t>(i * v), lg.begin() + static_cast<std::ptrdiff_t>((i + 1) * v));
        std::lock_guard g{mtx_};
        out_[static_cast<std::size_t>(req)].push_back(std::move(row));
      }
      if (group != nullptr && replace_after && s == *replace_after && r == 0)
        group->rank(0).request_replacement();
    });
  }

  /// Moves a request's record to another rank's engine (after a rank failure it starts over).
  void forget(int req) {
    std::lock_guard g{mtx_};
    engines_[static_cast<std::size_t>(seqs_.at(req).first)]->free(seqs_.at(req).second);
    seqs_.erase(req);
    out_[static_cast<std::size_t>(req)].clear();
  }

  void set_engines(std::vector<rank_engine*> engines) { engines_ = std::move(engines); }
  const trace& logits() const { return out_; }
  /// Every step's stats, [rank][step].
  std::vector<std::vector<ep_step_stats>> stats;

private:
  template <class Work>
  void run(ep_group* group, const assignment& a, int steps, Work&& work) {
    if (group == nullptr) {
      for (int s = 0; s < steps; ++s)
        for (int r = 0; r < static_cast<int>(a.size()); ++r)
          work(r, s);
      return;
    }
    auto st = run_lockstep(*group, steps, work);
    stats.resize(st.size());
    for (std::size_t r = 0; r < st.size(); ++r)
      stats[r].insert(stats[r].end(), st[r].begin(), st[r].end());
  }
  void record(int req, int rank, sequence_id seq, std::vector<float> logits) {
    std::lock_guard g{mtx_};
    seqs_[req] = {rank, seq};
    out_[static_cast<std::size_t>(req)].push_back(std::move(logits));
  }
  sequence_id seq(int req) {
    std::lock_guard g{mtx_};
    return seqs_.at(req).second;
  }

  std::vector<rank_engine*> engines_;
  std::mutex mtx_;
  std::map<int, std::pair<int, sequence_id>> seqs_;
  trace out_;
  static inline std::atomic<uint64_t> next_id_{1 << 20};
};

constexpr int decode_steps = 6;

/// The reference: one rank running every expert, no group; prefill, then batched decode.
const trace& reference() {
  static const trace t = [] {
    ep_run run({&engine(4)});
    assignment all{{0, 1, 2, 3, 4, 5}};
    run.prefill(nullptr, all);
    run.decode(nullptr, all, decode_steps);
    return run.logits();
  }();
  return t;
}

/// Checks `got` against the reference bit for bit, from decode step `from` of each request given.
void require_identical(const trace& got, const std::string& what) {
  const auto& want = reference();
  for (std::size_t req = 0; req < want.size(); ++req) {
    BOOST_TEST_CONTEXT(what << " request " << req) {
      BOOST_REQUIRE_EQUAL(got[req].size(), want[req].size());
      for (std::size_t k = 0; k < want[req].size(); ++k) {
        BOOST_REQUIRE_MESSAGE(!got[req][k].empty(), "step " << k << " failed");
        BOOST_REQUIRE_MESSAGE(std::memcmp(got[req][k].data(), want[req][k].data(), want[req][k].size() * 4) == 0,
                              "logits differ at step " << k << " (max |diff| "
                                                       << testing::max_abs_diff(got[req][k], want[req][k]) << ")");
      }
    }
  }
}

std::vector<rank_engine*> engines(int n) {
  std::vector<rank_engine*> v;
  for (int r = 0; r < n; ++r)
    v.push_back(&engine(r));
  return v;
}

ep_group::config group_config(int ranks) {
  ep_group::config c;
  c.ranks = ranks;
  c.settings = ep_settings::decode();
  c.settings.interval = 0; // re-placed only when a test asks
  return c;
}

/// Uneven per-rank batches with an empty rank where EP allows one.
assignment spread(int ranks) {
  switch (ranks) {
  case 1: return {{0, 1, 2, 3, 4, 5}};
  case 2: return {{0, 2, 4, 5}, {1, 3}};
  case 3: return {{0, 3}, {1, 4, 5}, {2}};
  default: return {{0, 1, 2}, {3}, {}, {4, 5}};
  }
}

} // namespace

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

BOOST_AUTO_TEST_CASE(a_failed_group_releases_the_ranks_waiting_in_a_step) {
  // Rank 1 dies while rank 0 is in a decode step that waits for it: the supervisor fails the
  // group, rank 0's step ends (failed) instead of waiting forever, and rank 0 carries on in a
  // group of its own with the same bits for a request started over.
  auto g2 = std::make_unique<ep_group>(model_config::tiny(), group_config(2));
  for (int r = 0; r < 2; ++r)
    engine(r).join_ep_group(g2->rank(r));
  ep_run run(engines(2));
  run.prefill(g2.get(), {{0}, {1}});
  std::optional<ep_step_stats> st;
  std::thread rank0([&] {
    run.decode(nullptr, {{0}}, 1); // only rank 0 steps (no lockstep driver)
    st = g2->rank(0).end_step();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  g2->fail();
  rank0.join();
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->failed);
  BOOST_TEST(g2->rank(0).failed());
  BOOST_TEST(g2->rank(1).end_step().failed);
  run.forget(0);
  run.forget(1);
  ep_group g1(model_config::tiny(), group_config(1));
  engine(0).join_ep_group(g1.rank(0));
  g2.reset();
  ep_run again({&engine(0)});
  again.prefill(&g1, {{0, 1, 2, 3, 4, 5}});
  again.decode(&g1, {{0, 1, 2, 3, 4, 5}}, decode_steps);
  require_identical(again.logits(), "EP1 after the failure");
}

BOOST_AUTO_TEST_CASE(ranks_without_requests_step_only_when_woken) {
  // Rank 0 alone has requests and steps by itself; ranks 1 and 2 run a step only when their
  // wake arrives, like a rank actor that sends itself a step message from the wake function.
  ep_group group(model_config::tiny(), group_config(3));
  for (int r = 0; r < 3; ++r)
    engine(r).join_ep_group(group.rank(r));
  struct mailbox {
    std::mutex mtx;
    std::condition_variable cv;
    std::deque<int64_t> wakes;
  };
  std::vector<mailbox> boxes(3);
  for (int r = 1; r < 3; ++r)
    group.rank(r).set_wake([&, r](int64_t step) {
      auto& b = boxes[static_cast<std::size_t>(r)];
      std::lock_guard g{b.mtx};
      b.wakes.push_back(step);
      b.cv.notify_one();
    });
  const int steps = 2 + decode_steps;
  std::atomic<int64_t> stale{0}, woken{0};
  std::vector<std::thread> idle;
  for (int r = 1; r < 3; ++r)
    idle.emplace_back([&, r] {
      auto& b = boxes[static_cast<std::size_t>(r)];
      while (group.rank(r).steps() < steps) {
        std::unique_lock lk{b.mtx};
        if (!b.cv.wait_for(lk, std::chrono::seconds(60), [&] { return !b.wakes.empty(); }))
          return; // the check below fails
        const int64_t step = b.wakes.front();
        b.wakes.pop_front();
        lk.unlock();
        if (step <= group.rank(r).steps()) {
          ++stale;
          continue;
        }
        ++woken;
        group.rank(r).end_step();
      }
    });
  // Rank 0's own steps: its two prefills, then its batched decode.
  for (int s = 0; s < 2; ++s) {
    auto& e = engine(0);
    prefill_request pr;
    pr.seq = sequence_id{900 + static_cast<uint64_t>(s)};
    pr.tokens = prompts()[static_cast<std::size_t>(s)];
    pr.sampling.max_tokens = 1 << 20;
    auto p = e.prefill(pr);
    BOOST_REQUIRE(p.status == engine_status::ok);
    BOOST_TEST(std::memcmp(p.logits.data(), reference()[static_cast<std::size_t>(s)][0].data(), p.logits.size() * 4) == 0);
    group.rank(0).end_step();
  }
  std::vector<sequence_id> ids{sequence_id{900}, sequence_id{901}};
  for (int k = 0; k < decode_steps; ++k) {
    std::vector<float> lg;
    auto outs = engine(0).decode_step(ids, &lg);
    const auto v = static_cast<std::size_t>(engine(0).model().vocab_size);
    for (std::size_t i = 0; i < 2; ++i)
      BOOST_TEST(std::memcmp(lg.data() + i * v, reference()[i][static_cast<std::size_t>(k) + 1].data(), v * 4) == 0);
    group.rank(0).end_step();
  }
  for (auto& t : idle)
    t.join();
  for (auto id : ids)
    engine(0).free(id);
  BOOST_TEST(group.rank(1).steps() == steps);
  BOOST_TEST(group.rank(2).steps() == steps);
  BOOST_TEST(woken.load() == 2 * steps);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace deepinfer::engine
