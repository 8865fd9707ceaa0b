// Applying the autoscaler: instances start after a provisioning delay (fleet), prefill instances
// told to leave stop pulling and leave when idle, decode instances drain for the grace period and
// then hand what they hold, with its KV, to the other decode instances.
#include "balancers/sim/simulator.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace deepinfer::balancers::sim {

namespace {

std::string name_of(instance_role role, int slot) {
  return (role == instance_role::prefill ? "prefill-" : "decode-") + std::to_string(slot);
}

} // namespace

bool simulator::serving(instance_role role, int slot) const {
  return slot < fleet_.slots(role) && fleet_.state(role, slot) == instance_state::running;
}

void simulator::announce(instance_role role) {
  std::vector<serving_router::instance_shape> shapes;
  const bool prefill = role == instance_role::prefill;
  const int dp = prefill ? cfg_.prefill_dp : cfg_.decode_dp;
  if (prefill)
    prefill_serving_.clear();
  for (int i = 0; i < fleet_.slots(role); ++i) {
    if (!serving(role, i))
      continue;
    shapes.push_back({name_of(role, i), static_cast<uint32_t>(dp), 0});
    if (prefill)
      prefill_serving_.push_back(i);
  }
  if (!prefill)
    router_.set_decode_instances(shapes); // a draining instance's placements are forgotten
  else if (cfg_.policy == prefill_policy::quota_buckets)
    router_.set_prefill_instances(shapes); // a draining instance pulls nothing more
}

void simulator::apply(const autoscaler::decision& d) {
  const auto up = [&](instance_role r) {
    return fleet_.count(r, instance_state::running) + fleet_.count(r, instance_state::provisioning);
  };
  for (int k = up(instance_role::prefill); k < d.prefill; ++k)
    start_instance(instance_role::prefill);
  for (int k = up(instance_role::decode); k < d.decode; ++k)
    start_instance(instance_role::decode);
  if (const int n = up(instance_role::prefill); d.prefill < n)
    shrink(instance_role::prefill, n - d.prefill, 0.0);
  if (const int n = up(instance_role::decode); d.decode < n)
    shrink(instance_role::decode, n - d.decode, d.drain_deadline_s);
}

void simulator::start_instance(instance_role role) {
  const auto st = fleet_.add(role, q_.now());
  ++res_.scale_ups;
  const auto slot = static_cast<size_t>(st.slot);
  uint64_t epoch = 0;
  // A reused slot starts empty (what it held went away before it left).
  if (role == instance_role::prefill) {
    if (slot >= prefill_.size())
      prefill_.resize(slot + 1);
    epoch = prefill_[slot].epoch + 1;
    prefill_[slot] = prefill_inst{};
    prefill_[slot].ranks.resize(static_cast<size_t>(cfg_.prefill_dp));
    prefill_[slot].epoch = epoch;
  } else {
    if (slot >= decode_.size())
      decode_.resize(slot + 1);
    epoch = decode_[slot].epoch + 1;
    decode_[slot] = decode_inst{};
    decode_[slot].epoch = epoch;
    dranks_.resize(std::max(dranks_.size(), (slot + 1) * static_cast<size_t>(cfg_.decode_dp)));
    for (int r = 0; r < cfg_.decode_dp; ++r)
      dranks_[slot * static_cast<size_t>(cfg_.decode_dp) + static_cast<size_t>(r)] = {};
  }
  instance_index_[name_of(role, st.slot)] = st.slot;
  q_.push(st.ready_at, [this, role, s = st.slot, epoch] { instance_ready(role, s, epoch); });
}

void simulator::instance_ready(instance_role role, int slot, uint64_t epoch) {
  const auto i = static_cast<size_t>(slot);
  const uint64_t now_epoch = role == instance_role::prefill ? prefill_[i].epoch : decode_[i].epoch;
  if (now_epoch != epoch || fleet_.state(role, slot) != instance_state::provisioning)
    return; // cancelled before it came up
  fleet_.ready(role, slot, q_.now());
  announce(role);
  record_peaks();
  if (role == instance_role::prefill) {
    if (cfg_.policy == prefill_policy::quota_buckets)
      pull_prefills();
    return;
  }
  while (!decode_waiting_.empty() && try_decode(decode_waiting_.front()))
    decode_waiting_.pop_front();
}

void simulator::shrink(instance_role role, int by, double drain_deadline) {
  const double now = q_.now();
  const bool prefill = role == instance_role::prefill;
  // 1. instances still provisioning serve nobody yet: cancel those first (the machine goes back
  // to the pool)
  for (int i = fleet_.slots(role) - 1; i >= 0 && by > 0; --i) {
    if (fleet_.state(role, i) != instance_state::provisioning)
      continue;
    fleet_.leave(role, i, now);
    if (prefill)
      ++prefill_[static_cast<size_t>(i)].epoch;
    else
      ++decode_[static_cast<size_t>(i)].epoch;
    ++res_.scale_downs;
    --by;
  }
  // 2. then the least loaded running instances drain
  for (; by > 0; --by) {
    int best = -1;
    double best_load = std::numeric_limits<double>::max();
    for (int i = 0; i < fleet_.slots(role); ++i) {
      if (!serving(role, i))
        continue;
      double load = 0.0;
      if (prefill)
        for (const auto& r : prefill_[static_cast<size_t>(i)].ranks)
          load += r.quota_load + static_cast<double>(r.fifo.size());
      else
        load = static_cast<double>(decode_[static_cast<size_t>(i)].batch.size());
      if (load < best_load) {
        best = i;
        best_load = load;
      }
    }
    if (best < 0 || fleet_.count(role, instance_state::running) <= 1)
      return; // never the last one
    fleet_.drain(role, best, now);
    ++res_.scale_downs;
    announce(role);
    if (!prefill) {
      const uint64_t epoch = decode_[static_cast<size_t>(best)].epoch;
      q_.push(std::max(now, drain_deadline), [this, best, epoch] { grace_over(best, epoch); });
    }
    leave_if_idle(role, best);
  }
}

void simulator::leave_if_idle(instance_role role, int slot) {
  if (fleet_.state(role, slot) != instance_state::draining)
    return;
  const auto i = static_cast<size_t>(slot);
  if (role == instance_role::prefill) {
    auto& inst = prefill_[i];
    const bool empty = std::all_of(inst.ranks.begin(), inst.ranks.end(), [](const prefill_rank& r) { return r.fifo.empty(); });
    if (inst.busy || !empty)
      return;
    ++inst.epoch;
  } else {
    auto& inst = decode_[i];
    if (inst.busy || !inst.batch.empty() || inst.handoff_pending)
      return;
    ++inst.epoch;
  }
  fleet_.leave(role, slot, q_.now());
}

void simulator::grace_over(int slot, uint64_t epoch) {
  auto& inst = decode_[static_cast<size_t>(slot)];
  if (inst.epoch != epoch || fleet_.state(instance_role::decode, slot) != instance_state::draining)
    return;
  if (inst.batch.empty())
    leave_if_idle(instance_role::decode, slot);
  else if (inst.busy)
    inst.handoff_due = true; // a step is running: hand off at its end (end_decode_step)
  else
    hand_off(slot);
}

void simulator::hand_off(int slot) {
  auto& inst = decode_[static_cast<size_t>(slot)];
  inst.handoff_due = false;
  const double now = q_.now();
  const auto& p = cfg_.provision;
  // Every request goes in one go; requests on the same rank share its link, so each one's pause
  // is the latency plus the KV sent before it and its own.
  std::vector<double> link(static_cast<size_t>(cfg_.decode_dp), 0.0);
  double last = now;
  for (flight* f : inst.batch) {
    auto& r = dranks_[static_cast<size_t>(f->decode_rank)];
    --r.requests;
    r.kv_tokens -= f->kv;
    auto& busy = link[static_cast<size_t>(f->decode_rank - slot * cfg_.decode_dp)];
    busy += static_cast<double>(f->kv) * p.handoff_bytes_per_token / p.handoff_bytes_per_s;
    const double at = now + p.handoff_latency_s + busy;
    f->left = f->finish_step - inst.steps; // >= 1: those that were done left at this step's end
    f->decode_rank = -1;
    ++res_.handoffs;
    res_.handoff_s += at - now;
    last = std::max(last, at);
    q_.push(at, [this, id = f->req.id] { rejoin(id); });
  }
  inst.batch.clear();
  inst.finish = {};
  // The instance leaves once the last of its KV is sent.
  inst.handoff_pending = true;
  q_.push(last, [this, slot, epoch = inst.epoch] {
    auto& in = decode_[static_cast<size_t>(slot)];
    if (in.epoch != epoch)
      return;
    in.handoff_pending = false;
    leave_if_idle(instance_role::decode, slot);
  });
}

void simulator::rejoin(uint64_t id) {
  // On the receiving side the request continues where it stopped, with its KV.
  if (!try_decode(id))
    decode_waiting_.push_back(id);
}

} // namespace deepinfer::balancers::sim
