#pragma once

// What the expert-parallel suites share: the prompts, a pool of one-thread engines on the tiny
// model, a driver that runs requests on the ranks of a group (or on one engine without one),
// and the reference trace of one engine that runs every expert.
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/ep/ep_group.hpp"
#include "engine/testing/engine_fixture.hpp"
#include "engine/testing/ep_lockstep.hpp"

namespace deepinfer::engine::testing {


/// Per request: [0] the prefill's last-position logits, then one entry per decode step.
using trace = std::vector<std::vector<std::vector<float>>>;
/// Requests of each rank, by index into the prompts.
using assignment = std::vector<std::vector<int>>;

inline const std::vector<std::vector<int32_t>>& prompts() {
  static const auto p = [] {
    std::vector<std::vector<int32_t>> out;
    uint64_t seed = 160;
    for (int64_t n : {37, 150, 260, 5, 129, 90})
      out.push_back(random_tokens(n, ++seed));
    return out;
  }();
  return p;
}

/// Engines of one rank each (one thread per backend), loaded once; tests join them to groups.
inline rank_engine& engine(int i) {
  static std::vector<std::unique_ptr<rank_engine>> engines = [] {
    std::vector<std::unique_ptr<rank_engine>> v;
    for (int r = 0; r < 5; ++r) {
      auto loaded = rank_engine::load(tiny_model_dir(), rank_engine::config{48, 1, fixture_isa()});
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
inline const trace& reference() {
  static const trace t = [] {
    ep_run run({&engine(4)});
    assignment all{{0, 1, 2, 3, 4, 5}};
    run.prefill(nullptr, all);
    run.decode(nullptr, all, decode_steps);
    return run.logits();
  }();
  return t;
}

/// Checks `got` against the reference bit for bit: every request, its prefill and decode steps.
inline void require_identical(const trace& got, const std::string& what) {
  const auto& want = reference();
  for (std::size_t req = 0; req < want.size(); ++req) {
    BOOST_TEST_CONTEXT(what << " request " << req) {
      BOOST_REQUIRE_EQUAL(got[req].size(), want[req].size());
      for (std::size_t k = 0; k < want[req].size(); ++k) {
        BOOST_REQUIRE_MESSAGE(!got[req][k].empty(), "step " << k << " failed");
        BOOST_REQUIRE_MESSAGE(std::memcmp(got[req][k].data(), want[req][k].data(), want[req][k].size() * 4) == 0,
                              "logits differ at step " << k << " (max |diff| "
                                                       << max_abs_diff(got[req][k], want[req][k]) << ")");
      }
    }
  }
}

inline std::vector<rank_engine*> engines(int n) {
  std::vector<rank_engine*> v;
  for (int r = 0; r < n; ++r)
    v.push_back(&engine(r));
  return v;
}

inline ep_group::config group_config(int ranks) {
  ep_group::config c;
  c.ranks = ranks;
  c.settings = ep_settings::decode();
  c.settings.interval = 0; // re-placed only when a test asks
  return c;
}

/// Uneven per-rank batches with an empty rank where EP allows one.
inline assignment spread(int ranks) {
  switch (ranks) {
  case 1: return {{0, 1, 2, 3, 4, 5}};
  case 2: return {{0, 2, 4, 5}, {1, 3}};
  case 3: return {{0, 3}, {1, 4, 5}, {2}};
  default: return {{0, 1, 2}, {3}, {}, {4, 5}};
  }
}

/// Joins `ranks` (engines on any backend) into one EP group, prefills and decodes `spread`'s
/// requests with a re-placement after decode step 2, and checks the reference's bits.
inline void require_group_matches_reference(std::vector<std::unique_ptr<rank_engine>>& ranks, const std::string& what) {
  const int ep = static_cast<int>(ranks.size());
  ep_group group(model_config::tiny(), group_config(ep));
  std::vector<rank_engine*> engines;
  for (int r = 0; r < ep; ++r) {
    ranks[static_cast<std::size_t>(r)]->join_ep_group(group.rank(r));
    engines.push_back(ranks[static_cast<std::size_t>(r)].get());
  }
  ep_run run(engines);
  run.prefill(&group, spread(ep));
  run.decode(&group, spread(ep), decode_steps, 2);
  require_identical(run.logits(), what);
}

} // namespace deepinfer::engine::testing
