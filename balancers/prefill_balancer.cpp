#include "balancers/prefill_balancer.hpp"

#include <algorithm>
#include <numeric>

namespace deepinfer::balancers {

prefill_balancer::prefill_balancer(const config& cfg)
    : cfg_(cfg), load_(static_cast<size_t>(cfg.engines * cfg.ranks_per_engine), 0.0) {
  const auto counts = divide({}, cfg_.engines);
  for (int b = 0; b < bucket_count; ++b)
    for (int k = 0; k < counts[static_cast<size_t>(b)]; ++k)
      engine_bucket_.push_back(b);
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

double prefill_balancer::engine_load(int engine) const {
  double sum = 0.0;
  for (int r = 0; r < cfg_.ranks_per_engine; ++r)
    sum += load_[index(engine, r)];
  return sum;
}

std::optional<int> prefill_balancer::best_engine(int bucket, bool stealing) const {
  const double capacity = cfg_.quota_per_rank_s * cfg_.ranks_per_engine;
  std::optional<int> best;
  double best_left = 0.0;
  for (int e = 0; e < cfg_.engines; ++e) {
    const bool own = engine_bucket_[static_cast<size_t>(e)] == bucket;
    if (own == stealing)
      continue;
    const double load = engine_load(e);
    // Only an engine whose own bucket has nothing queued lends itself out.
    if (stealing && !queue_[static_cast<size_t>(engine_bucket_[static_cast<size_t>(e)])].empty())
      continue;
    const double left = capacity - load;
    if (left > 0.0 && (!best || left > best_left)) {
      best = e;
      best_left = left;
    }
  }
  return best;
}

int prefill_balancer::lowest_rank(int engine) const {
  int best = 0;
  for (int r = 1; r < cfg_.ranks_per_engine; ++r)
    if (load_[index(engine, r)] < load_[index(engine, best)])
      best = r;
  return best;
}

std::vector<prefill_balancer::assignment> prefill_balancer::dispatch() {
  std::vector<assignment> out;
  for (const bool stealing : {false, true}) {
    if (stealing && !cfg_.lend_when_own_bucket_empty)
      break;
    // Longest buckets first, so stealing engines help where the backlog is.
    std::array<int, bucket_count> order{};
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return queue_[static_cast<size_t>(x)].size() > queue_[static_cast<size_t>(y)].size();
    });
    for (const int b : order) {
      auto& q = queue_[static_cast<size_t>(b)];
      while (!q.empty()) {
        const auto e = best_engine(b, stealing);
        if (!e)
          break;
        const int r = lowest_rank(*e);
        load_[index(*e, r)] += q.front().quota;
        out.push_back({q.front().id, *e, r});
        q.pop_front();
      }
    }
  }
  return out;
}

void prefill_balancer::complete(int engine, int rank, double quota) {
  auto& l = load_[index(engine, rank)];
  l = std::max(0.0, l - quota);
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

void prefill_balancer::new_round() {
  const auto want = divide(demand_, cfg_.engines);
  demand_ = {};
  std::array<int, bucket_count> have{};
  for (const int b : engine_bucket_)
    ++have[static_cast<size_t>(b)];
  // Move as few engines as possible: a bucket with too many gives up its least loaded engines.
  std::vector<int> freed;
  for (int b = 0; b < bucket_count; ++b) {
    auto excess = have[static_cast<size_t>(b)] - want[static_cast<size_t>(b)];
    std::vector<int> mine;
    for (int e = 0; e < cfg_.engines; ++e)
      if (engine_bucket_[static_cast<size_t>(e)] == b)
        mine.push_back(e);
    std::sort(mine.begin(), mine.end(), [&](int x, int y) { return engine_load(x) < engine_load(y); });
    for (size_t i = 0; excess > 0 && i < mine.size(); ++i, --excess)
      freed.push_back(mine[i]);
  }
  size_t next = 0;
  for (int b = 0; b < bucket_count; ++b)
    for (int k = have[static_cast<size_t>(b)]; k < want[static_cast<size_t>(b)] && next < freed.size(); ++k)
      engine_bucket_[static_cast<size_t>(freed[next++])] = b;
}

} // namespace deepinfer::balancers
