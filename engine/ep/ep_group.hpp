#pragma once

#include <memory>
#include <vector>

#include "engine/ep/ep_rank.hpp"
#include "engine/ep/in_process_ep_domain.hpp"

namespace deepinfer::engine {

/// An expert-parallel group whose ranks are threads of this process (the CPU backend; DESIGN
/// §5.4): the communication domain and its N `ep_rank`s, starting from one placement of the
/// routed experts over them. An instance of N ranks is one group; after a rank failure the
/// instance builds a new group from the healthy ranks (EP = their number), placed from the old
/// group's loads (`config::initial_load`), and its engines join it.
///
/// Each rank's engine joins its member (`rank_engine::join_ep_group(group.rank(r))`) and is
/// driven by its own thread; see `ep_rank` for the step protocol. The group must be destroyed
/// before the engines that joined it, or after they joined another group.
class ep_group {
public:
  /// Settings of the group.
  struct config {
    /// EP: ranks of the group (>= 1).
    int ranks = 2;
    ep_settings settings;
    /// Tokens routed to each expert, per MoE layer, to place from (an old group's
    /// `ep_rank::expert_loads()`); empty: every expert equally hot.
    std::vector<std::vector<double>> initial_load;

    /// A group of `ranks` healthy ranks after `old`'s group failed: its settings, placed from
    /// its window's loads.
    static config rebuilt(const ep_rank& old, int ranks) {
      return {ranks, old.settings(), old.expert_loads()};
    }
  };

  ep_group(const model_config& model, const config& cfg);
  ~ep_group();

  int ranks() const { return static_cast<int>(ranks_.size()); }

  /// Fails the group (any thread; the supervisor does it when a rank died): every rank's
  /// collectives return at once, its step ends with `ep_step_stats::failed`, and it computes
  /// nothing more. The instance then builds a new group from its healthy ranks.
  void fail() { domain_.fail(); }
  ep_rank& rank(int r) { return *ranks_[static_cast<std::size_t>(r)]; }
  const ep_rank& rank(int r) const { return *ranks_[static_cast<std::size_t>(r)]; }

private:
  in_process_ep_domain domain_;
  ep_step_signal signal_;
  std::vector<std::unique_ptr<ep_rank>> ranks_;
};

} // namespace deepinfer::engine
