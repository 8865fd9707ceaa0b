#include "balancers/ep_placer.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <queue>
#include <tuple>

namespace deepinfer::balancers {

ep_placer::ep_placer(const config& cfg)
    : cfg_(cfg), window_sum_(static_cast<size_t>(cfg.experts), 0.0) {
  const int total = cfg.experts + cfg.ranks * cfg.redundant_per_rank;
  slots_per_rank_ = (total + cfg.ranks - 1) / cfg.ranks;
  // Before any statistics every expert is equally hot.
  place(std::vector<double>(static_cast<size_t>(cfg.experts), 1.0));
}

bool ep_placer::record_step(std::span<const double> expert_load) {
  const auto window = static_cast<size_t>(cfg_.window);
  if (history_.size() < window) {
    history_.emplace_back(expert_load.begin(), expert_load.end());
  } else {
    auto& old = history_[history_pos_];
    for (size_t e = 0; e < old.size(); ++e)
      window_sum_[e] -= old[e];
    old.assign(expert_load.begin(), expert_load.end());
    history_pos_ = (history_pos_ + 1) % window;
  }
  for (size_t e = 0; e < window_sum_.size(); ++e)
    window_sum_[e] += expert_load[e];
  ++steps_;
  if (steps_ % cfg_.interval != 0)
    return false;
  place(window_sum_);
  return true;
}

void ep_placer::place(std::span<const double> load) {
  const auto experts = static_cast<size_t>(cfg_.experts);
  const auto ranks = static_cast<size_t>(cfg_.ranks);
  const auto per_rank = static_cast<size_t>(slots_per_rank_);
  // 1. replica counts: each extra slot goes to the expert with the largest load per replica
  std::vector<int> count(experts, 1);
  using item = std::pair<double, size_t>;
  std::priority_queue<item> heap;
  for (size_t e = 0; e < experts; ++e)
    heap.emplace(load[e], e);
  for (size_t extra = ranks * per_rank - experts; extra > 0; --extra) {
    const auto e = heap.top().second;
    heap.pop();
    ++count[e];
    heap.emplace(load[e] / count[e], e);
  }
  // 2. LPT: heaviest replica first onto the least loaded rank with a free slot that does not
  // already hold that expert (a second replica on the same rank would not spread load)
  std::vector<item> reps;
  for (size_t e = 0; e < experts; ++e)
    for (int k = 0; k < count[e]; ++k)
      reps.emplace_back(load[e] / count[e], e);
  std::stable_sort(reps.begin(), reps.end(), [](const item& x, const item& y) { return x.first > y.first; });
  slots_.assign(ranks, {});
  replicas_.assign(experts, {});
  std::vector<double> rank_sum(ranks, 0.0);
  for (const auto& [w, e] : reps) {
    std::optional<size_t> best;
    std::optional<size_t> fallback;
    for (size_t r = 0; r < ranks; ++r) {
      if (slots_[r].size() >= per_rank)
        continue;
      const bool holds = std::find(replicas_[e].begin(), replicas_[e].end(), static_cast<int>(r)) != replicas_[e].end();
      auto& slot = holds ? fallback : best;
      if (!slot || rank_sum[r] < rank_sum[*slot])
        slot = r;
    }
    const size_t r = best ? *best : *fallback;
    slots_[r].push_back(static_cast<int>(e));
    replicas_[e].push_back(static_cast<int>(r));
    rank_sum[r] += w;
  }
  refine(load, count, rank_sum);
}

void ep_placer::refine(std::span<const double> load, const std::vector<int>& count, std::vector<double>& rank_sum) {
  // 3. LPT with a fixed number of slots per rank can leave the heaviest rank a whole replica above
  // the others (with 16 experts on 4 ranks of 5 slots, one hot replica is 1/5 of a rank). Swap
  // one of its replicas with a lighter one of another rank while that lowers it; each swap makes
  // the sorted rank loads lexicographically smaller, so this ends; the bound only caps the work.
  const auto ranks = rank_sum.size();
  auto weight = [&](int e) { return load[static_cast<size_t>(e)] / count[static_cast<size_t>(e)]; };
  auto holds = [&](size_t r, int e) { return std::find(slots_[r].begin(), slots_[r].end(), e) != slots_[r].end(); };
  for (size_t iter = 0; iter < 4 * replicas_.size() + 16; ++iter) {
    const auto a = static_cast<size_t>(std::max_element(rank_sum.begin(), rank_sum.end()) - rank_sum.begin());
    double best_max = rank_sum[a] * (1 - 1e-9);
    std::optional<std::tuple<size_t, size_t, size_t>> best; // (b, slot in a, slot in b)
    for (size_t b = 0; b < ranks; ++b) {
      if (b == a)
        continue;
      for (size_t i = 0; i < slots_[a].size(); ++i)
        for (size_t j = 0; j < slots_[b].size(); ++j) {
          const int ea = slots_[a][i], eb = slots_[b][j];
          const double d = weight(ea) - weight(eb);
          if (d <= 0 || ea == eb || holds(b, ea) || holds(a, eb))
            continue;
          const double worst = std::max(rank_sum[a] - d, rank_sum[b] + d);
          if (worst < best_max) {
            best_max = worst;
            best = {b, i, j};
          }
        }
    }
    if (!best)
      return;
    const auto [b, i, j] = *best;
    const int ea = slots_[a][i], eb = slots_[b][j];
    const double d = weight(ea) - weight(eb);
    std::swap(slots_[a][i], slots_[b][j]);
    std::replace(replicas_[static_cast<size_t>(ea)].begin(), replicas_[static_cast<size_t>(ea)].end(),
                 static_cast<int>(a), static_cast<int>(b));
    std::replace(replicas_[static_cast<size_t>(eb)].begin(), replicas_[static_cast<size_t>(eb)].end(),
                 static_cast<int>(b), static_cast<int>(a));
    rank_sum[a] -= d;
    rank_sum[b] += d;
  }
}

int ep_placer::route(int expert, uint64_t token) const {
  const auto& reps = replicas_[static_cast<size_t>(expert)];
  return reps[token % reps.size()];
}

std::vector<double> ep_placer::rank_load(std::span<const double> expert_load) const {
  std::vector<double> out(static_cast<size_t>(cfg_.ranks), 0.0);
  for (size_t e = 0; e < replicas_.size(); ++e) {
    const double share = expert_load[e] / static_cast<double>(replicas_[e].size());
    for (const int r : replicas_[e])
      out[static_cast<size_t>(r)] += share;
  }
  return out;
}

double ep_placer::moe_lb(std::span<const double> rank_loads) {
  if (rank_loads.empty())
    return 1.0;
  const double sum = std::accumulate(rank_loads.begin(), rank_loads.end(), 0.0);
  if (sum <= 0.0)
    return 1.0;
  const double mx = *std::max_element(rank_loads.begin(), rank_loads.end());
  return mx / (sum / static_cast<double>(rank_loads.size()));
}

} // namespace deepinfer::balancers
