// Prefill half of the simulator: placement (serving_router or a baseline), budgeted steps, completion.
#include "kv/block_key.hpp"
#include "balancers/sim/simulator.hpp"

#include <algorithm>

namespace deepinfer::balancers::sim {

void simulator::place_prefill(uint64_t id) {
  const auto& f = flights_.at(id);
  // The baselines place over the running instances' ranks, in slot order.
  const int ranks = static_cast<int>(prefill_serving_.size()) * cfg_.prefill_dp;
  const auto at = [&](int g) {
    return std::pair{prefill_serving_[static_cast<size_t>(g / cfg_.prefill_dp)], g % cfg_.prefill_dp};
  };
  switch (cfg_.policy) {
  case prefill_policy::quota_buckets:
    router_.submit_prefill(id, f.req.input_len, f.quota);
    pull_prefills();
    return;
  case prefill_policy::round_robin: {
    const auto [inst, rank] = at(static_cast<int>(rr_next_++ % static_cast<uint64_t>(ranks)));
    assign(id, inst, rank);
    return;
  }
  case prefill_policy::least_outstanding: {
    int best = 0;
    int best_n = 0;
    for (int g = 0; g < ranks; ++g) {
      const auto [inst, rank] = at(g);
      const int n = prefill_[static_cast<size_t>(inst)].ranks[static_cast<size_t>(rank)].outstanding;
      if (g == 0 || n < best_n) {
        best = g;
        best_n = n;
      }
    }
    const auto [inst, rank] = at(best);
    assign(id, inst, rank);
    return;
  }
  }
}

void simulator::pull_prefills() {
  for (const auto& p : router_.dispatch_prefills())
    assign(p.id, instance_index(p.where.instance), static_cast<int>(p.where.rank));
}

void simulator::assign(uint64_t id, int engine, int rank) {
  auto& f = flights_.at(id);
  f.engine = engine;
  f.rank = rank;
  auto& inst = prefill_[static_cast<size_t>(engine)];
  auto& r = inst.ranks[static_cast<size_t>(rank)];
  r.fifo.push_back(id);
  ++r.outstanding;
  r.quota_load += f.quota;
  if (!inst.busy)
    start_prefill_step(engine);
}

void simulator::start_prefill_step(int inst_index) {
  auto& inst = prefill_[static_cast<size_t>(inst_index)];
  const double now = q_.now();
  const double a = cost_.coefficients().a0;
  double max_cost = 0.0;
  double sum_cost = 0.0;
  inst.finishing.clear();
  // 1. each rank takes FIFO chunks until its time budget is spent (§5.3: solve cost(q, c) for q)
  for (auto& r : inst.ranks) {
    double used = 0.0;
    bool any = false;
    for (const uint64_t id : r.fifo) {
      auto& f = flights_.at(id);
      const int64_t remaining = f.req.input_len - f.done;
      const double left = cfg_.step_budget_s - a - used;
      int64_t chunk = std::min(remaining, cost_.marginal_tokens(left, static_cast<double>(f.done)));
      if (chunk <= 0 && !any)
        chunk = std::min<int64_t>(remaining, 128); // never stall: a step always makes progress
      if (chunk <= 0)
        break;
      if (f.first_chunk < 0.0) {
        f.first_chunk = now;
        scale_wait_.push_back(static_cast<float>(now - f.req.arrival));
      }
      const double spent = cost_.marginal(static_cast<double>(chunk), static_cast<double>(f.done));
      used += spent;
      f.done += chunk;
      // Computed chunks give their quota back at once, so the balancer sees remaining work only.
      const double give = std::min(spent, f.quota - f.released);
      f.released += give;
      r.quota_load = std::max(0.0, r.quota_load - give);
      if (cfg_.policy == prefill_policy::quota_buckets)
        router_.release_prefill(id, give);
      any = true;
      if (f.done < f.req.input_len)
        break;
      inst.finishing.push_back(id);
    }
    const double c = any ? a + used : 0.0;
    max_cost = std::max(max_cost, c);
    sum_cost += c;
  }
  if (sum_cost <= 0.0) {
    inst.busy = false;
    return;
  }
  // 2. DP ranks of an instance step together (EP all-to-all): the slowest rank sets the pace,
  // unless the oracle spreads the step's work perfectly.
  const double dp = static_cast<double>(cfg_.prefill_dp);
  const double t = cfg_.oracle ? sum_cost / dp : max_cost;
  res_.prefill_busy += t * dp;
  res_.prefill_ideal += sum_cost;
  inst.busy = true;
  q_.push(now + t, [this, inst_index] { end_prefill_step(inst_index); });
}

void simulator::end_prefill_step(int inst_index) {
  auto& inst = prefill_[static_cast<size_t>(inst_index)];
  inst.busy = false;
  const auto finishing = std::move(inst.finishing);
  inst.finishing.clear();
  for (const uint64_t id : finishing) {
    auto& r = inst.ranks[static_cast<size_t>(flights_.at(id).rank)];
    r.fifo.pop_front(); // jobs finish in FIFO order
    prefill_done(id);
  }
  if (cfg_.policy == prefill_policy::quota_buckets)
    pull_prefills();
  if (!inst.busy)
    start_prefill_step(inst_index);
  if (!prefill_[static_cast<size_t>(inst_index)].busy)
    leave_if_idle(instance_role::prefill, inst_index);
}

void simulator::prefill_done(uint64_t id) {
  auto& f = flights_.at(id);
  const double now = q_.now();
  auto& r = prefill_[static_cast<size_t>(f.engine)].ranks[static_cast<size_t>(f.rank)];
  --r.outstanding;
  const double rest = f.quota - f.released;
  r.quota_load = std::max(0.0, r.quota_load - rest);
  if (cfg_.policy == prefill_policy::quota_buckets)
    router_.finish_prefill(id); // releases what the chunks did not
  const auto ttft = static_cast<float>(now - f.req.arrival);
  res_.ttft.push_back(ttft);
  win_ttft_.push_back(ttft);
  // Block KV of the prompt is stored; an SWA snapshot lands at align_down(L - 1, 128) (§4.2).
  // The hit's blocks were stored at arrival (and touched then, so GC did not take them since).
  cache_.insert(std::span<const uint64_t>(f.req.chain.data(), static_cast<size_t>(f.req.prompt_blocks)), now,
                static_cast<size_t>(f.hit) / kv::block_tokens);
  const int64_t p = (f.req.input_len - 1) / static_cast<int64_t>(kv::block_tokens);
  if (p >= 1 && p <= static_cast<int64_t>(f.req.chain.size())) // a source without block ids has no chain
    cache_.put_snapshot(f.req.chain[static_cast<size_t>(p - 1)], now);
  route_decode(id);
}

} // namespace deepinfer::balancers::sim
