// Decode half of the simulator: routing over every decode rank, synchronous steps, completion.
#include "kv/block_key.hpp"
#include "balancers/sim/simulator.hpp"

#include <algorithm>

namespace deepinfer::balancers::sim {

void simulator::route_decode(uint64_t id) {
  auto& f = flights_.at(id);
  if (f.req.output_len <= 1) { // the first token came with prefill
    decode_done(id);
    return;
  }
  const auto g = router_.choose(dranks_, f.req.input_len);
  if (!g) {
    decode_waiting_.push_back(id);
    return;
  }
  const int inst_index = *g / cfg_.decode_dp;
  auto& inst = decode_[static_cast<size_t>(inst_index)];
  auto& r = dranks_[static_cast<size_t>(*g)];
  ++r.requests;
  r.kv_tokens += f.req.input_len;
  f.decode_rank = *g;
  // Joins the next step; needs output_len - 1 steps.
  f.join_step = inst.steps + (inst.busy ? 1 : 0);
  inst.finish.emplace(f.join_step + f.req.output_len - 1, id);
  if (!inst.busy)
    start_decode_step(inst_index);
}

void simulator::start_decode_step(int inst_index) {
  auto& inst = decode_[static_cast<size_t>(inst_index)];
  const auto& c = cfg_.decode;
  const size_t lo = static_cast<size_t>(inst_index * cfg_.decode_dp);
  const size_t hi = lo + static_cast<size_t>(cfg_.decode_dp);
  double attn_max = 0.0;
  double attn_sum = 0.0;
  int64_t n_sum = 0;
  for (size_t g = lo; g < hi; ++g) {
    const double attn = c.alpha * static_cast<double>(dranks_[g].requests) + c.beta * static_cast<double>(dranks_[g].kv_tokens);
    attn_max = std::max(attn_max, attn);
    attn_sum += attn;
    n_sum += dranks_[g].requests;
  }
  if (n_sum == 0) {
    inst.busy = false;
    return;
  }
  const double dp = static_cast<double>(cfg_.decode_dp);
  const double moe = c.gamma * static_cast<double>(n_sum) / dp;
  const double t = cfg_.oracle ? c.t0 + moe + attn_sum / dp : c.t0 + c.moe_lb * moe + attn_max;
  res_.decode_busy += t * dp;
  res_.decode_ideal += (c.t0 + moe) * dp + attn_sum;
  res_.decode_active_s += t;
  inst.busy = true;
  // Only requests in the batch now grow this step; joiners start next step.
  std::vector<int64_t> batch(hi - lo);
  for (size_t g = lo; g < hi; ++g)
    batch[g - lo] = dranks_[g].requests;
  q_.push(q_.now() + t, [this, inst_index, batch = std::move(batch)] {
    auto& in = decode_[static_cast<size_t>(inst_index)];
    const size_t base = static_cast<size_t>(inst_index * cfg_.decode_dp);
    int64_t tokens = 0;
    for (size_t k = 0; k < batch.size(); ++k) {
      dranks_[base + k].kv_tokens += batch[k];
      tokens += batch[k];
    }
    res_.decode_tokens += tokens;
    win_decode_tokens_ += tokens;
    ++in.steps;
    in.busy = false;
    end_decode_step(inst_index);
  });
}

void simulator::end_decode_step(int inst_index) {
  auto& inst = decode_[static_cast<size_t>(inst_index)];
  while (!inst.finish.empty() && inst.finish.top().first <= inst.steps) {
    const uint64_t id = inst.finish.top().second;
    inst.finish.pop();
    decode_done(id);
  }
  while (!decode_waiting_.empty()) {
    const auto g = router_.choose(dranks_, flights_.at(decode_waiting_.front()).req.input_len);
    if (!g)
      break;
    const uint64_t id = decode_waiting_.front();
    decode_waiting_.pop_front();
    route_decode(id);
  }
  if (!inst.busy)
    start_decode_step(inst_index);
}

void simulator::decode_done(uint64_t id) {
  auto node = flights_.extract(id);
  auto& f = node.mapped();
  const double now = q_.now();
  if (f.decode_rank >= 0) {
    auto& r = dranks_[static_cast<size_t>(f.decode_rank)];
    --r.requests;
    r.kv_tokens -= f.req.input_len + f.req.output_len - 1;
  }
  ++res_.completed;
  res_.last_event = now;
  // Output blocks the source knows join the store; the last completed SWA copy is stored at
  // request end (a copy completes at most 5 tokens past its 128 boundary, §4.2).
  if (static_cast<int64_t>(f.req.chain.size()) > f.req.prompt_blocks)
    cache_.insert(f.req.chain, now, static_cast<size_t>(f.req.prompt_blocks)); // the prompt's at prefill
  const int64_t total = f.req.input_len + f.req.output_len;
  const int64_t p = (total - 5) / static_cast<int64_t>(kv::block_tokens);
  if (p >= 1 && p <= static_cast<int64_t>(f.req.chain.size()))
    cache_.put_snapshot(f.req.chain[static_cast<size_t>(p - 1)], now);
  if (auto next = wl_.follow_up(f.req, now)) {
    const double at = next->arrival;
    ++pending_followups_;
    q_.push(at, [this, req = std::move(*next)]() mutable {
      --pending_followups_;
      arrive(std::move(req));
    });
  }
}

} // namespace deepinfer::balancers::sim
