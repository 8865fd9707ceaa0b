#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "actors/messages.hpp"

namespace deepinfer::actors {

/// The controller's membership bookkeeping as a plain class: which node names joined, which
/// incarnation is current, which are dead or left, and the latest status of every instance.
/// Every change bumps the view's version.
class membership {
public:
  /// Returns the current time in milliseconds since the Unix epoch (injectable for tests).
  using clock_fn = std::function<int64_t()>;

  explicit membership(clock_fn clock);

  /// A node (re)joins. A newer incarnation replaces an older one; returns the node's join count.
  uint32_t join(const node_info& info);

  /// The node's agent went down. Ignored when `incarnation` is not the current one (a late DOWN
  /// for a process that was already replaced). Returns whether the view changed.
  bool mark_dead(const std::string& name, uint64_t incarnation, std::string reason);

  /// The node shut down on purpose. Returns whether the view changed.
  bool mark_left(const std::string& name);

  /// Records an instance's latest status (keyed by instance name). Returns whether it changed.
  bool report(const instance_status& status);

  /// Names the cluster's balancers (null: not running). Returns whether the view changed.
  bool set_balancers(caf::strong_actor_ptr prefill, caf::strong_actor_ptr decode);

  /// The node's entry, if it ever joined.
  std::optional<node_status> node(const std::string& name) const;

  const membership_view& view() const noexcept { return view_; }

private:
  node_status* find(const std::string& name);

  clock_fn clock_;
  membership_view view_;
};

/// The name of a node state, as shown in logs and metrics.
const char* to_string(node_state x);
/// The name of an instance state, as shown in logs and metrics.
const char* to_string(instance_state x);

} // namespace deepinfer::actors
