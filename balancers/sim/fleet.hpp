#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::balancers::sim {

/// What an instance slot of the simulated cluster is doing.
enum class instance_state {
  provisioning, ///< decided on; its machine loads the model (from the ready pool or cold)
  running,      ///< serving: placements go to it
  draining,     ///< told to leave: no new placements, finishes (decode: hands off) what it holds
  gone,         ///< left; the slot may be reused
};

/// Which stage an instance serves.
enum class instance_role { prefill, decode };

/// The machines of a simulated cluster over virtual time (DESIGN §6.5): instance slots per role
/// with their lifecycle, the ready pool of pre-started machines, and the rank-seconds they cost.
///
/// An instance decided on starts from a ready-pool machine after `from_pool_s` (the node loads
/// the model) or, when the pool has none ready, from a cold machine after `cold_s`; every machine
/// taken from the pool is replaced by a cold start so the pool refills. A machine that leaves an
/// instance goes back to the pool when the pool is short, and is released otherwise. Pool
/// machines cost `pool_ranks` each (booting or idle) and are counted apart from the instances.
/// Time never goes backwards: every call takes `now` >= the last one's.
class fleet {
public:
  struct config {
    int prefill_dp = 8;          ///< ranks per prefill instance
    int decode_dp = 64;          ///< ranks per decode instance
    int ready_pool = 0;          ///< machines kept ready and unassigned (autoscaler::config::ready_pool)
    double from_pool_s = 60.0;   ///< a pool machine serves this long after it is assigned
    double cold_s = 300.0;       ///< a cold machine serves (or joins the pool) this long after it is asked for
  };

  /// A started instance: its slot (reused after it left) and when it serves.
  struct start {
    int slot = 0;
    double ready_at = 0.0;
    bool from_pool = false;
  };

  explicit fleet(const config& cfg);

  /// `n` instances of `role` running from time `now` with no delay (the initial cluster).
  void seed(instance_role role, int n, double now);

  /// Fills the pool with ready machines at `now` (the cluster starts with its pool up).
  void fill_pool(double now);

  /// Starts an instance of `role` now (state provisioning), from the pool if a machine is ready.
  start add(instance_role role, double now);
  /// A provisioning instance is up (provisioning -> running).
  void ready(instance_role role, int slot, double now);
  /// A running instance is told to leave (running -> draining).
  void drain(instance_role role, int slot, double now);
  /// The instance is gone (from any state); its machine returns to the pool or is released.
  void leave(instance_role role, int slot, double now);

  instance_state state(instance_role role, int slot) const;
  /// Slots ever used by `role` (gone ones included).
  int slots(instance_role role) const;
  /// Instances of `role` in state `s`.
  int count(instance_role role, instance_state s) const;
  /// Pool machines ready now (after those whose cold start ended by `now` joined).
  int pool_ready(double now);

  /// Rank-seconds of `role`'s instances (provisioning + running + draining) up to `now`.
  double rank_seconds(instance_role role, double now) const;
  /// The same over both roles, and of the pool machines (booting or ready) up to `now`.
  double instance_rank_seconds(double now) const;
  double pool_rank_seconds(double now) const;
  int64_t pool_starts() const { return pool_starts_; }
  int64_t cold_starts() const { return cold_starts_; }

private:
  struct slot_info {
    instance_state state = instance_state::gone;
  };
  std::vector<slot_info>& of(instance_role role);
  const std::vector<slot_info>& of(instance_role role) const;
  int ranks(instance_role role) const;
  int pool_ranks() const;
  /// Adds the area since the last change, then moves the clock to `now`.
  void advance(double now);
  void refill(double now);

  config cfg_;
  std::vector<slot_info> prefill_, decode_;
  int pool_ready_ = 0;
  std::vector<double> pool_warming_; ///< when each cold-starting pool machine is ready
  int instance_ranks_[2] = {0, 0};   ///< ranks of instances not gone, per role
  double last_ = 0.0;
  double instance_area_[2] = {0.0, 0.0}, pool_area_ = 0.0;
  int64_t pool_starts_ = 0, cold_starts_ = 0;
};

} // namespace deepinfer::balancers::sim
