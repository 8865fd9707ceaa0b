#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "balancers/cost_model.hpp"

namespace deepinfer::balancers {

/// Prefill load balancer of DESIGN §6.1: four length buckets, engines pull by remaining
/// compute-quota, and inside an engine each request goes to the DP rank with the lowest quota load.
///
/// Synchronous and transport-free: the caller submits jobs, calls `dispatch()` whenever quota may
/// have been freed, reports completions, and calls `new_round()` on its round timer.
class prefill_balancer {
public:
  static constexpr int bucket_count = 4;

  struct config {
    int engines = 8;              ///< DP groups (prefill instances) at the start (see `reshape`)
    int ranks_per_engine = 8;     ///< DP ranks per engine at the start
    double quota_per_rank_s = 1.0; ///< outstanding compute-quota a rank may hold before it stops pulling
    /// Upper bounds (exclusive) of the first three buckets in input tokens: <16K, 16-64K, 64-256K, >=256K.
    std::array<int64_t, bucket_count - 1> bounds{16 * 1024, 64 * 1024, 256 * 1024};
    /// An engine whose own bucket queue is empty may pull (by remaining quota, as usual) from other
    /// buckets, so a bucket re-division lagging a burst never leaves quota unused while requests wait.
    bool lend_when_own_bucket_empty = true;
    /// false: an engine takes jobs while it has any quota left (the last may overrun it); true:
    /// only a job that fits in what is left, or any job when it holds nothing. With a quota of
    /// about one long prompt, a second long prompt then waits at the balancer, where the first
    /// engine to run dry takes it, instead of in the queue of the engine that ran the first.
    /// (bench/RESULTS.md "whole-job quota": long prompts' TTFT halves where an engine would
    /// idle, short prompts' p99 grows; a choice, off by default.)
    bool whole_job_fits = false;
    /// With `whole_job_fits`: when no engine has room for a job priced at most this (seconds), an
    /// engine may hold up to this much of such jobs beyond its quota, so short prompts do not
    /// wait at the balancer while every engine runs a long one: the engine's chunk scheduler runs
    /// them in its next step, ahead of the long prompt. The reserve is counted apart from the
    /// engine's other jobs, so a long prompt priced over the quota (an engine takes any job when
    /// it holds none) does not use it up. An engine with room (its own or a lender) is tried
    /// first. caf-launch sets it to one prefill step budget. 0: no reserve.
    double short_reserve_s = 0.0;
  };

  /// A request as the balancer sees it: its total input length picks the bucket and `quota` is
  /// `cost(q, c)` of the cost model. `uncached` (q) and `cached` (c): its tokens, for engines that
  /// price jobs with a cost model of their own (`set_engine_costs`); `uncached` < 0: not known,
  /// `quota` on every engine.
  struct job {
    uint64_t id = 0;
    int64_t input_len = 0;
    double quota = 0.0;
    int64_t uncached = -1;
    int64_t cached = 0;
  };

  /// Where `dispatch()` sent a job, and the quota it holds there (its price on that engine).
  struct assignment {
    uint64_t id = 0;
    int engine = 0;
    int rank = 0;
    double quota = 0.0;
    bool reserve = false; ///< placed on the engine's short reserve (`config::short_reserve_s`)
  };

  explicit prefill_balancer(const config& cfg);

  /// The bucket (0..3) of a total input length.
  int bucket_of(int64_t input_len) const;

  /// Queues a job in its bucket and counts its quota as this round's demand.
  void submit(const job& j);

  /// Hands queued jobs to engines while any engine serving their bucket has remaining quota.
  std::vector<assignment> dispatch();

  /// Releases quota a job held on (engine, rank): all of it at completion, or the part a computed
  /// chunk used (the caller then releases only the rest at completion). `reserve`: the job was
  /// placed on the engine's short reserve (`assignment::reserve`).
  void complete(int engine, int rank, double quota, bool reserve = false);

  /// Re-divides engines among buckets by last round's demand share and starts a new round.
  void new_round();

  /// Changes the engines' shapes: engine `e` now has `ranks[e]` DP ranks (0: down, it pulls
  /// nothing and serves no bucket). The load of every rank that still exists is kept (a rank
  /// that is gone takes its quota with it); engines that come up take buckets by this round's
  /// demand so far, moving as few engines as possible. Engines are indices: a caller that names
  /// instances keeps a stable index per name.
  void reshape(const std::vector<int>& ranks);

  /// The cost model each engine's ranks are priced by (index = engine; nullopt, or an engine past
  /// the end: jobs hold their `quota`). An engine on slower hardware prices a job higher, so it
  /// holds more quota for it and pulls less: the quotas of a rank reflect the engine it prices.
  /// Demand (`submit`, the bucket division) stays in the jobs' own `quota`.
  void set_engine_costs(std::vector<std::optional<cost_model>> costs);

  /// What `j` costs on `engine`: its own model's `cost(uncached, cached)`, else `j.quota`.
  double price(const job& j, int engine) const;

  /// Takes a queued job out (its request went away before any engine pulled it); false when it
  /// is not queued (already dispatched, or unknown).
  bool withdraw(uint64_t id);

  /// Engines (including down ones) and the DP ranks of one.
  int engines() const { return static_cast<int>(ranks_.size()); }
  int ranks_of(int engine) const { return ranks_[static_cast<size_t>(engine)]; }

  /// Pure rule behind `new_round()`: engine counts per bucket proportional to `demand` by largest
  /// remainder, at least one for every bucket with demand (when there are enough engines).
  /// All-zero demand gives an even split.
  static std::array<int, bucket_count> divide(const std::array<double, bucket_count>& demand, int engines);

  /// Bucket each engine serves now (-1: the engine is down).
  const std::vector<int>& engine_bucket() const { return engine_bucket_; }
  /// Outstanding quota of (engine, rank); 0 for a rank that does not exist.
  double rank_load(int engine, int rank) const;
  /// Outstanding quota summed over an engine.
  double engine_load(int engine) const;
  /// Jobs waiting in a bucket.
  size_t queued(int bucket) const { return queue_[static_cast<size_t>(bucket)].size(); }

private:
  /// An engine and the job's price there.
  struct priced {
    int engine = 0;
    double quota = 0.0;
  };
  std::optional<priced> best_engine(const job& j, int bucket, bool stealing, bool reserve) const;
  int lowest_rank(int engine) const;
  int live_engines() const;
  /// Moves engines between buckets until each has `want[b]`: a bucket with too many gives up
  /// its least loaded engines; engines without a bucket (just up) are placed first.
  void rebucket(const std::array<int, bucket_count>& want);

  config cfg_;
  std::array<std::deque<job>, bucket_count> queue_;
  std::array<double, bucket_count> demand_{};
  std::vector<int> engine_bucket_;
  std::vector<int> ranks_;
  std::vector<std::vector<double>> load_;
  std::vector<double> reserve_load_; ///< per engine: the part of its load placed on its reserve
  std::vector<std::optional<cost_model>> engine_cost_;
};

} // namespace deepinfer::balancers
