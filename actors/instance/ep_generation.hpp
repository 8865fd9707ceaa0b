#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/ep/ep_group.hpp"

namespace deepinfer::engine {
class rank_engine;
}

namespace deepinfer::actors {

/// One generation of an instance's expert-parallel group (DESIGN §5.4), shared by the instance's
/// supervisor and its N rank actors (threads of this process). The group itself is made by the
/// first rank whose engine has loaded (it knows the model), so the supervisor never loads one;
/// every rank's engine then joins its member.
///
/// What crosses threads goes through here only: `fail` (the supervisor, when a rank died), and a
/// summary rank 0 publishes after its steps (EP size, moe_lb, re-placements, the placement, the
/// window's loads), which the supervisor reads for the admin listing and for the next
/// generation's first placement.
class ep_generation {
public:
  /// What rank 0 last published.
  struct summary {
    int64_t steps = 0;
    double moe_lb = 1.0;
    int64_t replacements = 0;
    int64_t moved_slots = 0;
    /// Bytes of routed-expert slot buffers per rank (each rank publishes its own).
    std::vector<std::size_t> routed_expert_bytes;
    /// The current placement (nullopt before the group exists).
    std::optional<engine::expert_placement> placement;
    /// Tokens routed to each expert over the window, per layer (the next generation places from it).
    std::vector<std::vector<double>> loads;
  };

  /// `cfg.ranks` ranks with `cfg.settings`, placed from `cfg.initial_load`.
  explicit ep_generation(engine::ep_group::config cfg);
  ~ep_generation();
  ep_generation(const ep_generation&) = delete;
  ep_generation& operator=(const ep_generation&) = delete;

  int ranks() const { return cfg_.ranks; }

  /// Makes `engine` rank `rank` of the group (creating the group at the first call) and sets its
  /// wake. Returns the member, or nullptr when the generation already failed (the rank must stop).
  engine::ep_rank* join(engine::rank_engine& engine, int rank, std::function<void(int64_t)> wake);

  /// Fails the group (any thread): every collective returns at once; ranks that join later get
  /// nullptr.
  void fail();
  bool failed() const;

  /// After rank `rank`'s `end_step`: rank 0 publishes the group's figures (every `every` steps,
  /// and at once after a re-placement); every rank its own slot bytes once.
  void publish(const engine::ep_rank& member, const engine::ep_step_stats& stats, int64_t every = 8);

  summary read() const;

private:
  engine::ep_group::config cfg_;
  mutable std::mutex mtx_;
  bool failed_ = false;
  std::unique_ptr<engine::ep_group> group_;
  summary summary_;
};

} // namespace deepinfer::actors
