// Decode half of the simulator: placement by serving_router over every decode rank, synchronous
// steps that report each request's KV growth to it, completion.
#include "kv/block_key.hpp"
#include "balancers/sim/simulator.hpp"

#include <algorithm>

namespace deepinfer::balancers::sim {

void simulator::route_decode(uint64_t id) {
  auto& f = flights_.at(id);
  f.decode_start = q_.now();
  if (f.req.output_len <= 1) { // the first token came with prefill
    decode_done(id);
    return;
  }
  f.kv = f.req.input_len;
  f.left = f.req.output_len - 1;
  if (!try_decode(id))
    decode_waiting_.push_back(id);
}

bool simulator::try_decode(uint64_t id) {
  auto& f = flights_.at(id);
  // Reserves what the request will reach, as the live path reserves prompt + max_tokens (here
  // the request's real output length stands for its max_tokens). A handed-off request arrives
  // with the KV it has grown and the steps it has left.
  const auto where = router_.place_decode(id, f.kv, f.req.input_len + f.req.output_len - 1);
  if (!where)
    return false;
  const int inst_index = instance_index(where->instance);
  const int g = inst_index * cfg_.decode_dp + static_cast<int>(where->rank);
  auto& inst = decode_[static_cast<size_t>(inst_index)];
  auto& r = dranks_[static_cast<size_t>(g)];
  ++r.requests;
  r.kv_tokens += f.kv;
  f.decode_rank = g;
  f.batch_pos = inst.batch.size();
  inst.batch.push_back(&f);
  // Joins the next step; needs `left` steps (output_len - 1 on its first placement).
  f.join_step = inst.steps + (inst.busy ? 1 : 0);
  f.finish_step = f.join_step + f.left;
  inst.finish.emplace(f.finish_step, id);
  if (!inst.busy)
    start_decode_step(inst_index);
  return true;
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
  // Only requests in the batch now grow this step; joiners (appended to `batch` while the step
  // runs) start next step, and none leaves before the step ends.
  const size_t stepping = inst.batch.size();
  q_.push(q_.now() + t, [this, inst_index, stepping] {
    auto& in = decode_[static_cast<size_t>(inst_index)];
    for (size_t k = 0; k < stepping; ++k) {
      flight& f = *in.batch[k];
      ++f.kv;
      ++dranks_[static_cast<size_t>(f.decode_rank)].kv_tokens;
      router_.grow_decode(f.req.id, f.kv);
    }
    const auto tokens = static_cast<int64_t>(stepping);
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
  // The router refused these for lack of room; what just finished may have made some.
  while (!decode_waiting_.empty() && try_decode(decode_waiting_.front()))
    decode_waiting_.pop_front();
  auto& in = decode_[static_cast<size_t>(inst_index)];
  if (in.handoff_due) {
    hand_off(inst_index); // the grace period ended during the step that just ran
    return;
  }
  if (!in.busy)
    start_decode_step(inst_index);
  if (!in.busy)
    leave_if_idle(instance_role::decode, inst_index);
}

void simulator::decode_done(uint64_t id) {
  auto node = flights_.extract(id);
  auto& f = node.mapped();
  const double now = q_.now();
  if (f.decode_rank >= 0) {
    auto& r = dranks_[static_cast<size_t>(f.decode_rank)];
    --r.requests;
    r.kv_tokens -= f.kv;
    auto& batch = decode_[static_cast<size_t>(f.decode_rank / cfg_.decode_dp)].batch;
    batch[f.batch_pos] = batch.back();
    batch[f.batch_pos]->batch_pos = f.batch_pos;
    batch.pop_back();
    router_.finish_decode(id);
  }
  ++res_.completed;
  res_.last_event = now;
  if (f.req.output_len > 1)
    res_.tpot.push_back(static_cast<float>((now - f.decode_start) / static_cast<double>(f.req.output_len - 1)));
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
