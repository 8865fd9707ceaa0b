#include "actors/instance/ep_generation.hpp"

#include <utility>

#include "engine/rank_engine.hpp"

namespace deepinfer::actors {

ep_generation::ep_generation(engine::ep_group::config cfg) : cfg_(std::move(cfg)) {
  summary_.routed_expert_bytes.assign(static_cast<std::size_t>(cfg_.ranks), 0);
}

// The group goes with the last holder: by then every engine that joined it has been destroyed
// (each rank's state releases its engine before this generation), so no member is bound.
ep_generation::~ep_generation() = default;

engine::ep_rank* ep_generation::join(engine::rank_engine& engine, int rank,
                                     std::function<void(int64_t)> wake) {
  engine::ep_rank* member = nullptr;
  {
    std::lock_guard g{mtx_};
    if (failed_ || rank < 0 || rank >= cfg_.ranks)
      return nullptr;
    if (!group_) {
      group_ = std::make_unique<engine::ep_group>(engine.model(), cfg_);
      summary_.placement = group_->rank(0).placement();
    }
    member = &group_->rank(rank);
  }
  // Outside the lock: binding copies this rank's experts, and a wake may fire at once.
  engine.join_ep_group(*member);
  {
    std::lock_guard g{mtx_};
    summary_.routed_expert_bytes[static_cast<std::size_t>(rank)] = member->routed_expert_bytes();
  }
  member->set_wake(std::move(wake));
  return member;
}

void ep_generation::fail() {
  std::lock_guard g{mtx_};
  failed_ = true;
  if (group_)
    group_->fail();
}

bool ep_generation::failed() const {
  std::lock_guard g{mtx_};
  return failed_;
}

void ep_generation::publish(const engine::ep_rank& member, const engine::ep_step_stats& stats,
                            int64_t every) {
  if (member.rank() != 0 || stats.failed)
    return;
  if (!stats.replaced && every > 0 && stats.step % every != 0)
    return;
  auto loads = member.expert_loads();
  std::lock_guard g{mtx_};
  summary_.steps = stats.step;
  summary_.moe_lb = stats.moe_lb;
  summary_.replacements = member.replacements();
  summary_.moved_slots = member.moved_slots();
  summary_.loads = std::move(loads);
  if (stats.replaced)
    summary_.placement = member.placement();
}

ep_generation::summary ep_generation::read() const {
  std::lock_guard g{mtx_};
  return summary_;
}

} // namespace deepinfer::actors
