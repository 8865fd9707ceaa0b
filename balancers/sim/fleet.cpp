#include "balancers/sim/fleet.hpp"

#include "recipe/base/assert.hpp"

#include <algorithm>

namespace deepinfer::balancers::sim {

fleet::fleet(const config& cfg) : cfg_(cfg) {}

std::vector<fleet::slot_info>& fleet::of(instance_role role) {
  return role == instance_role::prefill ? prefill_ : decode_;
}

const std::vector<fleet::slot_info>& fleet::of(instance_role role) const {
  return role == instance_role::prefill ? prefill_ : decode_;
}

int fleet::ranks(instance_role role) const {
  return role == instance_role::prefill ? cfg_.prefill_dp : cfg_.decode_dp;
}

int fleet::pool_ranks() const {
  // A pool machine must be able to become either role.
  return std::max(cfg_.prefill_dp, cfg_.decode_dp);
}

void fleet::advance(double now) {
  DEEPINFER_ASSERT(now >= last_, "fleet: time went backwards");
  const double dt = now - last_;
  for (int r = 0; r < 2; ++r)
    instance_area_[r] += dt * static_cast<double>(instance_ranks_[r]);
  pool_area_ += dt * static_cast<double>(pool_ranks()) *
                static_cast<double>(pool_ready_ + static_cast<int>(pool_warming_.size()));
  last_ = now;
  // Cold starts for the pool that ended by now are ready machines (the count of pool machines,
  // and so the area, does not change).
  auto done = std::partition(pool_warming_.begin(), pool_warming_.end(), [&](double t) { return t > now; });
  pool_ready_ += static_cast<int>(pool_warming_.end() - done);
  pool_warming_.erase(done, pool_warming_.end());
}

void fleet::refill(double now) {
  while (pool_ready_ + static_cast<int>(pool_warming_.size()) < cfg_.ready_pool) {
    pool_warming_.push_back(now + cfg_.cold_s);
    ++cold_starts_;
  }
}

void fleet::seed(instance_role role, int n, double now) {
  advance(now);
  for (int k = 0; k < n; ++k) {
    of(role).push_back({instance_state::running});
    instance_ranks_[static_cast<int>(role)] += ranks(role);
  }
}

void fleet::fill_pool(double now) {
  advance(now);
  pool_ready_ = std::max(pool_ready_, cfg_.ready_pool);
}

fleet::start fleet::add(instance_role role, double now) {
  advance(now);
  auto& v = of(role);
  auto it = std::find_if(v.begin(), v.end(), [](const slot_info& s) { return s.state == instance_state::gone; });
  if (it == v.end()) {
    v.push_back({});
    it = v.end() - 1;
  }
  it->state = instance_state::provisioning;
  instance_ranks_[static_cast<int>(role)] += ranks(role);
  start s{static_cast<int>(it - v.begin()), now + cfg_.cold_s, false};
  if (pool_ready_ > 0) {
    --pool_ready_;
    ++pool_starts_;
    s.ready_at = now + cfg_.from_pool_s;
    s.from_pool = true;
  } else {
    ++cold_starts_;
  }
  refill(now);
  return s;
}

void fleet::ready(instance_role role, int slot, double now) {
  advance(now);
  auto& s = of(role).at(static_cast<size_t>(slot));
  DEEPINFER_ASSERT(s.state == instance_state::provisioning, "fleet: ready: not provisioning");
  s.state = instance_state::running;
}

void fleet::drain(instance_role role, int slot, double now) {
  advance(now);
  auto& s = of(role).at(static_cast<size_t>(slot));
  DEEPINFER_ASSERT(s.state == instance_state::running, "fleet: drain: not running");
  s.state = instance_state::draining;
}

void fleet::leave(instance_role role, int slot, double now) {
  advance(now);
  auto& s = of(role).at(static_cast<size_t>(slot));
  DEEPINFER_ASSERT(s.state != instance_state::gone, "fleet: leave: already gone");
  s.state = instance_state::gone;
  instance_ranks_[static_cast<int>(role)] -= ranks(role);
  // The machine is up and has the model: it is a ready pool machine if the pool is short.
  if (pool_ready_ + static_cast<int>(pool_warming_.size()) < cfg_.ready_pool)
    ++pool_ready_;
  // A refill cold start that the returned machine makes unnecessary is cancelled.
  while (!pool_warming_.empty() && pool_ready_ + static_cast<int>(pool_warming_.size()) > cfg_.ready_pool)
    pool_warming_.pop_back();
}

instance_state fleet::state(instance_role role, int slot) const {
  return of(role).at(static_cast<size_t>(slot)).state;
}

int fleet::slots(instance_role role) const {
  return static_cast<int>(of(role).size());
}

int fleet::count(instance_role role, instance_state st) const {
  return static_cast<int>(std::count_if(of(role).begin(), of(role).end(), [&](const slot_info& s) { return s.state == st; }));
}

int fleet::pool_ready(double now) {
  advance(now);
  return pool_ready_;
}

double fleet::rank_seconds(instance_role role, double now) const {
  const int r = static_cast<int>(role);
  return instance_area_[r] + std::max(0.0, now - last_) * static_cast<double>(instance_ranks_[r]);
}

double fleet::instance_rank_seconds(double now) const {
  return rank_seconds(instance_role::prefill, now) + rank_seconds(instance_role::decode, now);
}

double fleet::pool_rank_seconds(double now) const {
  return pool_area_ + std::max(0.0, now - last_) * static_cast<double>(pool_ranks()) *
                          static_cast<double>(pool_ready_ + static_cast<int>(pool_warming_.size()));
}

} // namespace deepinfer::balancers::sim
