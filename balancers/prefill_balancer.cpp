#include "balancers/prefill_balancer.hpp"

#include <algorithm>
#include <numeric>

namespace deepinfer::balancers {

prefill_balancer::prefill_balancer(const config& cfg)
    : cfg_(cfg), engine_bucket_(static_cast<size_t>(cfg.engines), -1),
      ranks_(static_cast<size_t>(cfg.engines), cfg.ranks_per_engine),
      load_(static_cast<size_t>(cfg.engines), std::vector<double>(static_cast<size_t>(cfg.ranks_per_engine), 0.0)),
      reserve_load_(static_cast<size_t>(cfg.engines), 0.0) {
  rebucket(divide({}, live_engines()));
}

int prefill_balancer::bucket_of(int64_t input_len) const {
  int b = 0;
  while (b < bucket_count - 1 && input_len >= cfg_.bounds[static_cast<size_t>(b)])
    ++b;
  return b;
}

void prefill_balancer::submit(const job& j) {
  const auto b = static_cast<size_t>(bucket_of(j.input_len));
  queue_[b].push_back(j);
  demand_[b] += j.quota;
}

bool prefill_balancer::withdraw(uint64_t id) {
  for (auto& q : queue_) {
    auto it = std::find_if(q.begin(), q.end(), [&](const job& j) { return j.id == id; });
    if (it != q.end()) {
      q.erase(it);
      return true;
    }
  }
  return false;
}

double prefill_balancer::rank_load(int engine, int rank) const {
  if (engine < 0 || engine >= engines() || rank < 0 || rank >= ranks_of(engine))
    return 0.0;
  return load_[static_cast<size_t>(engine)][static_cast<size_t>(rank)];
}

double prefill_balancer::engine_load(int engine) const {
  const auto& l = load_[static_cast<size_t>(engine)];
  return std::accumulate(l.begin(), l.end(), 0.0);
}

int prefill_balancer::live_engines() const {
  return static_cast<int>(std::count_if(ranks_.begin(), ranks_.end(), [](int r) { return r > 0; }));
}

std::optional<prefill_balancer::priced> prefill_balancer::best_engine(const job& j, int bucket, bool stealing,
                                                                      bool reserve) const {
  std::optional<priced> best;
  double best_left = 0.0;
  for (int e = 0; e < engines(); ++e) {
    const int served = engine_bucket_[static_cast<size_t>(e)];
    if (served < 0)
      continue; // down
    const bool own = served == bucket;
    if (own == stealing)
      continue;
    // Only an engine whose own bucket has nothing queued lends itself out.
    if (stealing && !queue_[static_cast<size_t>(served)].empty())
      continue;
    // Among the engines with quota left, the one with the most left after taking the job: with
    // one price everywhere that is the most left now; an engine that prices it higher (slower
    // hardware) must have that much more to spare.
    const double load = engine_load(e);
    const double left = cfg_.quota_per_rank_s * ranks_of(e) - load;
    const double cost = price(j, e);
    const double after = left - cost;
    const bool takes = !cfg_.whole_job_fits ? left > 0.0
                       // (the reserve's own load is never negative, so this bounds the job's price
                       // too; the slack lets prices that add up to the reserve exactly fit)
                       : reserve ? reserve_load_[static_cast<size_t>(e)] + cost <= cfg_.short_reserve_s + 1e-12
                                 : after >= 0.0 || load <= 1e-9;
    if (takes && (!best || after > best_left)) {
      best = priced{e, cost};
      best_left = after;
    }
  }
  return best;
}

int prefill_balancer::lowest_rank(int engine) const {
  const auto& l = load_[static_cast<size_t>(engine)];
  return static_cast<int>(std::min_element(l.begin(), l.end()) - l.begin());
}

std::vector<prefill_balancer::assignment> prefill_balancer::dispatch() {
  std::vector<assignment> out;
  // Engines with room first (their own bucket's, then lenders); then, for short jobs that found
  // none, the reserve above the quota, in the same order.
  const bool with_reserve = cfg_.whole_job_fits && cfg_.short_reserve_s > 0.0;
  for (const int pass : {0, 1, 2, 3}) {
    const bool stealing = pass % 2 == 1, reserve = pass >= 2;
    if ((stealing && !cfg_.lend_when_own_bucket_empty) || (reserve && !with_reserve))
      continue;
    // Longest buckets first, so stealing engines help where the backlog is.
    std::array<int, bucket_count> order{};
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return queue_[static_cast<size_t>(x)].size() > queue_[static_cast<size_t>(y)].size();
    });
    for (const int b : order) {
      auto& q = queue_[static_cast<size_t>(b)];
      while (!q.empty()) {
        const auto e = best_engine(q.front(), b, stealing, reserve);
        if (!e)
          break;
        const int r = lowest_rank(e->engine);
        load_[static_cast<size_t>(e->engine)][static_cast<size_t>(r)] += e->quota;
        if (reserve)
          reserve_load_[static_cast<size_t>(e->engine)] += e->quota;
        out.push_back({q.front().id, e->engine, r, e->quota, reserve});
        q.pop_front();
      }
    }
  }
  return out;
}

void prefill_balancer::set_engine_costs(std::vector<std::optional<cost_model>> costs) {
  engine_cost_ = std::move(costs);
}

double prefill_balancer::price(const job& j, int engine) const {
  if (j.uncached < 0 || engine < 0 || static_cast<size_t>(engine) >= engine_cost_.size())
    return j.quota;
  const auto& model = engine_cost_[static_cast<size_t>(engine)];
  return model ? model->cost(static_cast<double>(j.uncached), static_cast<double>(j.cached)) : j.quota;
}

void prefill_balancer::complete(int engine, int rank, double quota, bool reserve) {
  if (engine < 0 || engine >= engines() || rank < 0 || rank >= ranks_of(engine))
    return; // the rank went away with its load
  auto& l = load_[static_cast<size_t>(engine)][static_cast<size_t>(rank)];
  l = std::max(0.0, l - quota);
  if (reserve) {
    auto& r = reserve_load_[static_cast<size_t>(engine)];
    r = std::max(0.0, r - quota);
  }
}

std::array<int, prefill_balancer::bucket_count>
prefill_balancer::divide(const std::array<double, bucket_count>& demand, int engines) {
  std::array<int, bucket_count> counts{};
  const double total = std::accumulate(demand.begin(), demand.end(), 0.0);
  if (total <= 0.0) {
    for (int b = 0; b < bucket_count; ++b)
      counts[static_cast<size_t>(b)] = engines / bucket_count + (b < engines % bucket_count ? 1 : 0);
    return counts;
  }
  const int active = static_cast<int>(std::count_if(demand.begin(), demand.end(), [](double d) { return d > 0.0; }));
  // 1. a floor of one engine for every bucket with demand, if there are enough engines
  const bool floor_one = engines >= active;
  int left = engines;
  std::array<double, bucket_count> rem{};
  if (floor_one)
    for (size_t b = 0; b < bucket_count; ++b)
      if (demand[b] > 0.0) {
        counts[b] = 1;
        --left;
      }
  // 2. the rest proportionally to demand, largest remainder first
  const int base = left;
  for (size_t b = 0; b < bucket_count; ++b) {
    const double exact = demand[b] / total * base;
    const int whole = static_cast<int>(exact);
    counts[b] += whole;
    left -= whole;
    rem[b] = exact - whole;
  }
  while (left > 0) {
    const auto it = std::max_element(rem.begin(), rem.end());
    counts[static_cast<size_t>(it - rem.begin())] += 1;
    *it = -1.0;
    --left;
  }
  return counts;
}

void prefill_balancer::rebucket(const std::array<int, bucket_count>& want) {
  std::array<int, bucket_count> have{};
  std::vector<int> freed;
  for (int e = 0; e < engines(); ++e) {
    const int b = engine_bucket_[static_cast<size_t>(e)];
    if (ranks_of(e) == 0)
      engine_bucket_[static_cast<size_t>(e)] = -1;
    else if (b < 0)
      freed.push_back(e); // just up: placed before any engine moves
    else
      ++have[static_cast<size_t>(b)];
  }
  // A bucket with too many gives up its least loaded engines.
  for (int b = 0; b < bucket_count; ++b) {
    auto excess = have[static_cast<size_t>(b)] - want[static_cast<size_t>(b)];
    std::vector<int> mine;
    for (int e = 0; e < engines(); ++e)
      if (engine_bucket_[static_cast<size_t>(e)] == b)
        mine.push_back(e);
    std::sort(mine.begin(), mine.end(), [&](int x, int y) { return engine_load(x) < engine_load(y); });
    for (size_t i = 0; excess > 0 && i < mine.size(); ++i, --excess) {
      freed.push_back(mine[i]);
      --have[static_cast<size_t>(b)];
    }
  }
  size_t next = 0;
  for (int b = 0; b < bucket_count; ++b)
    for (int k = have[static_cast<size_t>(b)]; k < want[static_cast<size_t>(b)] && next < freed.size(); ++k)
      engine_bucket_[static_cast<size_t>(freed[next++])] = b;
  // Engines left over (only when `want` sums to fewer than the live engines) serve bucket 0.
  for (; next < freed.size(); ++next)
    engine_bucket_[static_cast<size_t>(freed[next])] = 0;
}

void prefill_balancer::new_round() {
  rebucket(divide(demand_, live_engines()));
  demand_ = {};
}

void prefill_balancer::reshape(const std::vector<int>& ranks) {
  const auto n = ranks.size();
  engine_bucket_.resize(n, -1);
  load_.resize(n);
  reserve_load_.resize(n, 0.0);
  ranks_.resize(n);
  for (size_t e = 0; e < n; ++e) {
    ranks_[e] = std::max(ranks[e], 0);
    load_[e].resize(static_cast<size_t>(ranks_[e]), 0.0);
    // A rank that went away took its load along, reserved jobs too.
    reserve_load_[e] = std::min(reserve_load_[e], std::accumulate(load_[e].begin(), load_[e].end(), 0.0));
  }
  rebucket(divide(demand_, live_engines()));
}

} // namespace deepinfer::balancers
