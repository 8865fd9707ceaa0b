#pragma once

#include <thread>
#include <vector>

#include "engine/ep/ep_group.hpp"

namespace deepinfer::engine::testing {

/// Runs `steps` lockstep steps of `group`, rank r on its own thread: `work(r, step)` (the
/// rank's forwards of that step, possibly none) then `group.rank(r).end_step()`. Returns each
/// rank's step stats, [rank][step]. `work` runs on the rank threads: it must not use Boost.Test
/// assertions (collect, then check on the caller's thread).
template <class Work>
std::vector<std::vector<ep_step_stats>> run_lockstep(ep_group& group, int steps, Work&& work) {
  std::vector<std::vector<ep_step_stats>> stats(static_cast<std::size_t>(group.ranks()));
  std::vector<std::thread> threads;
  for (int r = 0; r < group.ranks(); ++r)
    threads.emplace_back([&, r] {
      for (int s = 0; s < steps; ++s) {
        work(r, s);
        stats[static_cast<std::size_t>(r)].push_back(group.rank(r).end_step());
      }
    });
  for (auto& t : threads)
    t.join();
  return stats;
}

} // namespace deepinfer::engine::testing
